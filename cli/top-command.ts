import { setTimeout as sleep } from 'node:timers/promises';

import { connect, type Fleet } from '../client/fleet-client.js';
import { ErrorCode, ExitCode, ThymosError } from '../shared/errors/index.js';
import { cpuSeconds, memoryBytes } from '../shared/platform/index.js';
import type { AgentStatusRow, FleetStatus } from '../shared/protocol/index.js';
import { commandNamed, usageLine } from './command-book.js';
import { parseFleetArgs } from './fleet-args.js';
import { formatAge, formatBytes, formatPlacement, renderLease, renderTable } from './table.js';

/** One agent as `thymos top` shows it: its status row and what was measured of its process since the last frame. */
export interface TopRow extends AgentStatusRow {
  pss_bytes: number | null;
  /** Share of one core over the last interval, in %. */
  cpu_percent: number | null;
  events_per_s: number | null;
}

/** The orders a key picks; the first is the default. */
export const TOP_SORTS = {
  c: { name: 'cpu', by: (r: TopRow) => -(r.cpu_percent ?? -1) },
  m: { name: 'memory', by: (r: TopRow) => -(r.pss_bytes ?? r.rss_bytes ?? -1) },
  e: { name: 'events', by: (r: TopRow) => -(r.events_per_s ?? -1) },
  p: { name: 'score', by: (r: TopRow) => -(r.score ?? -1) },
  s: { name: 'state', by: (r: TopRow) => ['active', 'listening', 'dormant', 'archived'].indexOf(r.state) },
  i: { name: 'id', by: (r: TopRow) => r.id },
} as const;
export type TopSort = keyof typeof TOP_SORTS;

/**
 * Measures a fleet between frames: CPU and PSS of each running agent from /proc (Linux; other
 * systems show `-`), and events per second from the routed counts the supervisor keeps.
 */
export class TopSampler {
  #last = new Map<string, { at: number; cpu: number | undefined; routed: number }>();

  rows(status: FleetStatus, now = performance.now()): TopRow[] {
    const next = new Map<string, { at: number; cpu: number | undefined; routed: number }>();
    const rows = status.agents.map((a) => {
      const cpu = a.pid === null ? undefined : cpuSeconds(a.pid);
      const before = this.#last.get(a.id);
      const seconds = before ? (now - before.at) / 1000 : 0;
      next.set(a.id, { at: now, cpu, routed: a.events_routed });
      const memory = a.pid === null ? undefined : memoryBytes(a.pid);
      return {
        ...a,
        pss_bytes: memory?.pss ?? null,
        rss_bytes: memory?.rss ?? a.rss_bytes,
        cpu_percent:
          seconds > 0 && cpu !== undefined && before?.cpu !== undefined ? Math.max(0, ((cpu - before.cpu) / seconds) * 100) : null,
        events_per_s: seconds > 0 && before ? Math.max(0, (a.events_routed - before.routed) / seconds) : null,
      };
    });
    this.#last = next;
    return rows;
  }
}

/** One frame: a header line, the table sorted as asked, and the keys. */
export function renderTop(status: FleetStatus, rows: TopRow[], sort: TopSort, now = Date.now()): string {
  const order = TOP_SORTS[sort].by as (r: TopRow) => number | string;
  const sorted = [...rows].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : 1;
  });
  const c = status.counts;
  const head = `thymos top — ${new Date(now).toISOString().slice(11, 19)} · ${rows.length} agents: ${c.active} active, ${c.listening} listening, ${c.dormant} dormant, ${c.archived} archived · supervisor pid ${status.supervisor.pid}`;
  const leased = Boolean(status.supervisor.lease);
  const placed = new Map(status.agents.map((a) => [a.id, a.placement]));
  const table = renderTable(
    ['ID', 'STATE', 'MODE', 'SCORE', 'PID', 'PORT', 'PSS', 'RSS', 'CPU%', 'RESTARTS', 'LAST MOVE', 'EV/S', ...(leased ? ['HOST'] : [])],
    sorted.map((r) => [
      r.id,
      r.state,
      r.mode,
      r.score === null ? null : `${r.score.toFixed(2)} ${r.source ?? ''}`.trim(),
      r.pid,
      r.port,
      formatBytes(r.pss_bytes),
      formatBytes(r.rss_bytes),
      r.cpu_percent === null ? null : r.cpu_percent.toFixed(1),
      r.restarts,
      `${formatAge(r.since, now)} ago`,
      r.events_per_s === null ? null : r.events_per_s.toFixed(1),
      ...(leased ? [formatPlacement(placed.get(r.id))] : []),
    ]),
  );
  const keys = Object.entries(TOP_SORTS)
    .map(([k, v]) => `${k} ${v.name}`)
    .join(', ');
  const lease = leased ? `\n${renderLease(status.supervisor.lease, now)}` : '';
  return `${head}${lease}\n\n${table}\n\nsorted by ${TOP_SORTS[sort].name} · keys: ${keys} · q quits`;
}

/** `thymos top [--interval MS] [--once] [--sort KEY]`: the fleet, live, until q. */
export async function runTopCommand(argv: string[]): Promise<number> {
  const spec = commandNamed('top')!;
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec);
  const interval = args.values.interval === undefined ? 1000 : Number(args.values.interval);
  if (!Number.isInteger(interval) || interval < 200 || interval > 60_000)
    throw new ThymosError(
      ErrorCode.USAGE,
      `--interval: expected milliseconds from 200 to 60000, got ${JSON.stringify(args.values.interval)}\nusage: ${usage}`,
    );
  const byName = Object.entries(TOP_SORTS).find(([k, v]) => args.values.sort === k || args.values.sort === v.name)?.[0] as
    TopSort | undefined;
  if (args.values.sort !== undefined && !byName)
    throw new ThymosError(
      ErrorCode.USAGE,
      `--sort: expected one of ${Object.values(TOP_SORTS)
        .map((v) => v.name)
        .join(', ')}, got ${JSON.stringify(args.values.sort)}\nusage: ${usage}`,
    );
  let sort: TopSort = byName ?? 'c';
  const live = args.values.once !== true && process.stdout.isTTY === true && process.stdin.isTTY === true;
  const fleet = await connect(args.config);
  const sampler = new TopSampler();
  try {
    if (!live) {
      // One frame for a pipe or a script: measured over one interval, so CPU and events have a rate.
      sampler.rows(await fleet.status());
      await sleep(interval);
      const status = await fleet.status();
      const rows = sampler.rows(status);
      process.stdout.write(`${args.json ? JSON.stringify(rows) : renderTop(status, rows, sort)}\n`);
      return ExitCode.OK;
    }
    return await liveView(
      fleet,
      sampler,
      interval,
      () => sort,
      (s) => (sort = s),
    );
  } finally {
    await fleet.close();
  }
}

/** Draws a frame every `interval` on the terminal's alternate screen until q (or Ctrl-C); a key of TOP_SORTS re-sorts at once. */
async function liveView(
  fleet: Fleet,
  sampler: TopSampler,
  interval: number,
  sort: () => TopSort,
  setSort: (s: TopSort) => void,
): Promise<number> {
  const out = process.stdout;
  let quit!: () => void;
  const quitting = new Promise<void>((resolve) => (quit = resolve));
  let last: { status: FleetStatus; rows: TopRow[] } | undefined;
  const draw = () => last && out.write(`\x1b[H\x1b[2J${renderTop(last.status, last.rows, sort())}`);
  const onKey = (key: Buffer) => {
    const k = key.toString('utf8');
    if (k === 'q' || k === 'Q' || k === '\x03') quit();
    else if (Object.hasOwn(TOP_SORTS, k)) {
      setSort(k as TopSort);
      draw();
    }
  };
  process.stdin.setRawMode(true);
  process.stdin.on('data', onKey);
  out.write('\x1b[?1049h\x1b[?25l');
  try {
    let error: string | undefined;
    while (true) {
      try {
        const status = await fleet.status();
        last = { status, rows: sampler.rows(status) };
        error = undefined;
        draw();
      } catch (err) {
        // The supervisor restarting: say so and keep trying, as top does with a process that went away.
        if ((err as Error).message !== error) out.write(`\x1b[H\x1b[2Jthymos top: ${(error = (err as Error).message)}; trying again…`);
      }
      const stop = await Promise.race([quitting.then(() => true), sleep(interval).then(() => false)]);
      if (stop) return ExitCode.OK;
    }
  } finally {
    out.write('\x1b[?25h\x1b[?1049l');
    process.stdin.off('data', onKey);
    process.stdin.setRawMode(false);
    process.stdin.pause();
  }
}
