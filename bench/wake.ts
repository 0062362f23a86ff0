import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Fleet } from '../client/fleet-client.js';
import { memoryBytes } from '../shared/platform/process-usage.js';
import { withBenchFleet } from './bench-fleet.js';
import { domainText } from './domain-text.js';
import { bareNodeSpawnMs, cpuSeconds, treeCpuSeconds } from './proc-stats.js';
import type { Figure, Scenario, ScenarioResult } from './scenario.js';
import { quantile, round } from './stats.js';

export const AGENTS = 50;
const PLACES = 5;
/** NPCs that live at the places a walk goes between: 4 at each of 5. Each of the two walks has its own. */
const NPCS = 20;
/** Steps of each walk: the first 5 visit each place for the first time (each NPC's first-ever wake), the 10 after come back. */
const WALK_STEPS = 15;
/** A player who walks on: the next step begins this long after the last one began. */
const PACE_MS = 3000;
const SINGLE_WAKES = 5;
const IDLE_SECONDS = 10;

export const id = (i: number) => `npc_${String(i).padStart(2, '0')}`;
/** Where NPC `i` lives: the lingering walk's 5 places, the paced walk's 5 roads, or far away. */
const home = (i: number) => (i < NPCS ? `place_${i % PLACES}` : i < 2 * NPCS ? `road_${i % PLACES}` : 'far_away');

/** 50 agents; the first 20 live at 5 places, and an NPC is relevant where the player is. */
export function domainPkl(): string {
  // The agents beyond the two walks' NPCs live where the player never goes.
  return domainText(AGENTS, (i) => ({ id: id(i), name: `Npc ${i}`, more: `homeLocation = "${home(i)}"` }), [
    'relevanceRules {',
    '  new { name = "same location"; condition = new SameAs { property = "location"; global = "player_location" }; score = 0.9 }',
    '}',
  ]);
}

/** `Pss:` and `Rss:` of a process from /proc/<pid>/smaps_rollup, in MB. */
export function memoryMb(pid: number): { pss: number; rss: number } {
  const usage = memoryBytes(pid);
  return usage ? { pss: usage.pss / 2 ** 20, rss: usage.rss / 2 ** 20 } : { pss: Number.NaN, rss: Number.NaN };
}

/** PSS and RSS of a bare idle `node`, once it has settled. */
async function bareIdleMb(): Promise<{ pss: number; rss: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  try {
    await sleep(1000);
    return memoryMb(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}

/** The JSON lines of a pino log whose message starts with `msg`. */
function logLines(file: string, msg: string): Array<Record<string, unknown>> {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line) => {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          return typeof entry.msg === 'string' && entry.msg.startsWith(msg) ? [entry] : [];
        } catch {
          return [];
        }
      });
  } catch {
    return [];
  }
}

/** Median of each phase over the entries' `phases`, in the order they first appear. */
function phaseMedians(
  entries: Array<Record<string, unknown>>,
  extra: (e: Record<string, unknown>) => Record<string, number> = () => ({}),
): string {
  const byPhase = new Map<string, number[]>();
  for (const e of entries) {
    for (const [name, ms] of Object.entries({ ...extra(e), ...(e.phases as Record<string, number>) }))
      (byPhase.get(name) ?? byPhase.set(name, []).get(name)!).push(ms);
  }
  return [...byPhase.entries()].map(([name, values]) => `${name} ${round(quantile(values, 0.5), 0)}`).join(' · ');
}

/**
 * Idle: the running agents once the work that follows a start (compiling, collecting) has
 * died down: 2-second windows until one costs under 5 % of a core together, at most 40 s.
 */
async function idleFigures(fleet: Fleet, bare: { pss: number; rss: number }, notes: string[]): Promise<Figure[]> {
  const status = await fleet.status();
  const pids = status.agents.flatMap((a) => (a.pid ? [a.pid] : []));
  const fleetCpu = () => pids.reduce((sum, p) => sum + cpuSeconds(p), 0);
  const settleStart = performance.now();
  for (;;) {
    const before = fleetCpu();
    await sleep(2000);
    if ((fleetCpu() - before) / 2 < 0.05 || performance.now() - settleStart > 40_000) break;
  }
  const settledAfter = (performance.now() - settleStart) / 1000;
  const memory = pids.map(memoryMb);
  const cpu0 = fleetCpu();
  const supervisorCpu0 = cpuSeconds(status.supervisor.pid);
  await sleep(IDLE_SECONDS * 1000);
  const cpuIdle = (fleetCpu() - cpu0) / IDLE_SECONDS;
  const supervisorIdle = (cpuSeconds(status.supervisor.pid) - supervisorCpu0) / IDLE_SECONDS;
  const pss = quantile(
    memory.map((m) => m.pss),
    0.5,
  );
  const rss = quantile(
    memory.map((m) => m.rss),
    0.5,
  );
  notes.push(
    `The idle figures were taken ${round(settledAfter, 0)} s after the 50 had started, once a 2-second window cost the 50 under 5 % of a core (or after 40 s).`,
  );
  return [
    {
      metric: `idle agent PSS / RSS, median of ${pids.length}`,
      value: `${round(pss, 1)} / ${round(rss, 1)}`,
      unit: 'MB',
      goal: 'PSS ≤ 40 MB',
    },
    { metric: 'bare idle node PSS / RSS (same run)', value: `${round(bare.pss, 1)} / ${round(bare.rss, 1)}`, unit: 'MB' },
    {
      metric: `CPU of ${pids.length} idle agents together, over ${IDLE_SECONDS} s`,
      value: round(cpuIdle * 100, 1),
      unit: '% of one core',
      goal: '≤ 5 %',
    },
    { metric: `supervisor CPU while ${pids.length} agents idle`, value: round(supervisorIdle * 100, 1), unit: '% of one core' },
  ];
}

interface Walk {
  npcs: ReadonlySet<string>;
  /** Each step from the reconcile call to the last of the 4 answers, and its reconcile alone, ms; first visits apart. */
  firstVisits: number[];
  steps: number[];
  reconciles: number[];
  /** How long each step waited for the one before (lingering: the pool's refill). */
  waited: number[];
  /** Epoch ms the walk began and ended, to pick its entries out of the logs. */
  from: number;
  to: number;
}

/**
 * A player walking between the 5 places named `${where}_<n>`, as a game loop does: each step
 * reconciles with the player there (waking the 4 NPCs of the place, putting the 4 left behind to
 * sleep) and then talks to each of the 4, together. `before(lastStepStarted)` is the player's
 * pace. Each reconcile returns after its wakes (`returnAfterWakes`), so the talks begin while the
 * NPCs left behind still stop. The walk ends with its NPCs put to sleep.
 */
async function walk(fleet: Fleet, where: 'place' | 'road', before: (lastStepStarted: number) => Promise<unknown>): Promise<Walk> {
  const offset = where === 'place' ? 0 : NPCS;
  const npcs = Array.from({ length: NPCS }, (_, i) => id(offset + i));
  const locations = Object.fromEntries(npcs.map((n, i) => [n, { location: home(offset + i) }]));
  const out: Walk = { npcs: new Set(npcs), firstVisits: [], steps: [], reconciles: [], waited: [], from: Date.now(), to: 0 };
  let last = performance.now();
  for (let s = 0; s < WALK_STEPS; s++) {
    const here = `${where}_${s % PLACES}`;
    const there = npcs.filter((_, i) => home(offset + i) === here);
    const w = performance.now();
    await before(last);
    out.waited.push(performance.now() - w);
    const t = (last = performance.now());
    const report = await fleet.reconcile({ global: { player_location: here }, agents: locations }, { returnAfterWakes: true });
    const reconciled = performance.now() - t;
    const woke = report.started.filter((a) => there.includes(a)).length;
    if (report.failed.length > 0 || woke !== there.length)
      throw new Error(`step ${s} to ${here}: woke ${woke}/${there.length}, failed ${JSON.stringify(report.failed)}`);
    await Promise.all(there.map((n) => talk(fleet, n)));
    const ms = performance.now() - t;
    // The first step starts from an empty village: it wakes without putting anyone to sleep.
    if (s < PLACES) out.firstVisits.push(ms);
    else {
      out.steps.push(ms);
      out.reconciles.push(reconciled);
    }
  }
  await fleet.reconcile({ global: { player_location: 'nowhere' }, agents: locations });
  out.to = Date.now();
  return out;
}

/** The figures of a walk, `label` naming its pace. */
function walkFigures(label: string, w: Walk, goal: string | undefined): Figure[] {
  const ms = (values: number[], q: number) => round(quantile(values, q), 0);
  return [
    {
      metric: `a player's step, ${label}: reconcile wakes the 4 NPCs there, then each answers a talk; median / p95 of the ${w.steps.length} steps back to a place`,
      value: `${ms(w.steps, 0.5)} / ${ms(w.steps, 0.95)}`,
      unit: 'ms',
      ...(goal ? { goal } : {}),
    },
    { metric: `a player's step, ${label}: the reconcile alone, median`, value: ms(w.reconciles, 0.5), unit: 'ms' },
    {
      metric: `a player's step, ${label}: the ${w.firstVisits.length} first visits (every NPC there wakes for the first time), median / max`,
      value: `${ms(w.firstVisits, 0.5)} / ${ms(w.firstVisits, 1)}`,
      unit: 'ms',
    },
  ];
}

/** A supervisor log's entries for `agents` between two epoch ms. */
function entriesOf(
  log: string,
  msg: string,
  agents: ReadonlySet<string> | undefined,
  from: number,
  to: number,
): Array<Record<string, unknown>> {
  return logLines(log, msg).filter(
    (e) => (!agents || agents.has(String(e.agent))) && Date.parse(String(e.time)) >= from && Date.parse(String(e.time)) <= to,
  );
}

/**
 * Where a wake-and-stop cycle's CPU goes, from the `cpu_ms` the agent's process logs at each step
 * (its spare's `spare ready` and `claimed`, then `agent ready`, `stopping`, `stopped`), over
 * agent `who`'s first `n` lives: medians, ms. What the agent's process did not use went to the
 * supervisor, nats-server and pm2.
 */
export function cycleCpuParts(data: string, who: string, n: number, cycleMs: number): string {
  const pool = join(data, 'logs', 'pool');
  const spares = existsSync(pool)
    ? readdirSync(pool).flatMap((f) => [...logLines(join(pool, f), 'spare ready'), ...logLines(join(pool, f), 'claimed')])
    : [];
  const claimed = spares.filter((e) => e.msg === 'claimed' && e.agent === who).slice(0, n);
  const agentLog = join(data, 'logs', `${who}.log`);
  const cpu = (entries: Array<Record<string, unknown>>) => entries.slice(0, n).map((e) => Number(e.cpu_ms));
  const ready = cpu(logLines(agentLog, 'agent ready'));
  const stopping = cpu(logLines(agentLog, 'stopping'));
  const stopped = cpu(logLines(agentLog, 'stopped'));
  const med = (values: number[]) => round(quantile(values, 0.5), 0);
  const boot = med(cpu(spares.filter((e) => e.msg === 'spare ready')));
  const parts = claimed.length
    ? [`a spare's boot and rehearsal ${boot}`, `the claim ${med(ready.map((r, i) => r - Number(claimed[i]?.cpu_ms)))}`]
    : [`the cold start ${med(ready)}`];
  parts.push(
    `serving until asked to stop ${med(stopping.map((s, i) => s - ready[i]!))}`,
    `the stop ${med(stopped.map((s, i) => s - stopping[i]!))}`,
    `the supervisor, nats-server and pm2 ${round(cycleMs - quantile(stopped, 0.5), 0)}`,
  );
  return parts.join(' · ');
}

/** Each agent's first-ever start against its later ones, from the supervisor's `agent started` entries: medians, ms. */
function firstAndLaterStarts(starts: Array<Record<string, unknown>>): { first: number; later: number } {
  const seen = new Set<string>();
  const first: number[] = [];
  const later: number[] = [];
  for (const e of starts) {
    const who = String(e.agent);
    (seen.has(who) ? later : first).push(Number(e.ms));
    seen.add(who);
  }
  return { first: quantile(first, 0.5), later: quantile(later, 0.5) };
}

async function talk(fleet: Fleet, who: string): Promise<void> {
  const client = await fleet.agent(who);
  const result = await client.callTool({ name: `talk_to_${who}`, arguments: { message: 'Good day. What news?', speaker: 'player' } });
  if (result.isError) throw new Error(`${who} did not answer: ${JSON.stringify(result.content)}`);
}

/**
 * Waking, as a game loop sees it: one agent Dormant → Active; a player walking between 5
 * places where 4 NPCs each live (each step wakes the 4 there, puts the 4 left behind to
 * sleep, and has each of the 4 answer a talk); 20 and 50 agents in one reconcile; then 50
 * idle agents' memory (PSS beside RSS) and CPU. Every figure beside a bare `node` of the same
 * run, and the wake trace (the supervisor's and the agent's phases) from their logs.
 */
export const wakeScenario: Scenario = {
  name: 'wake',
  title: 'Waking: one agent, a player walking between places, 20 and 50 at once, and 50 idle agents',
  run: () => wakeRun(0),
};

/** The same with a warm pool of 4 spares (one place's NPCs); the player lingers until it has refilled. */
export const wakePoolScenario: Scenario = {
  name: 'wake-pool',
  title: 'Waking from a warm pool of 4 spares: one agent, a player walking between places, Archived → Active, 20 and 50 at once',
  run: () => wakeRun(POOL),
};

const POOL = 4;

/** Waits until the pool is full again (at most 30 s); the ms it took. */
export async function refilled(fleet: Fleet): Promise<number> {
  const t = performance.now();
  for (;;) {
    const pool = (await fleet.status()).supervisor.pool;
    if (!pool || pool.ready >= pool.size || performance.now() - t > 30_000) return performance.now() - t;
    await sleep(100);
  }
}

async function wakeRun(poolSize: number): Promise<Omit<ScenarioResult, 'name' | 'title'>> {
  const bareSpawn: number[] = [];
  for (let i = 0; i < 5; i++) bareSpawn.push(await bareNodeSpawnMs());
  const bare = await bareIdleMb();
  const toml = [
    '[lifecycle]',
    'min_dwell_ms = 0',
    `max_running = ${AGENTS}`,
    `max_active = ${AGENTS}`,
    '[log]',
    'level = "info"',
    '[supervisor]',
    `pool_size = ${poolSize}`,
  ];
  return withBenchFleet('wake', domainPkl(), toml, async (fleet, data) => {
    const figures: Figure[] = [];
    const notes: string[] = [];
    const force = (ids: string[], relevance: number) => ({ agents: Object.fromEntries(ids.map((a) => [a, { relevance }])) });
    const all = Array.from({ length: AGENTS }, (_, i) => id(i));
    const checked = async (what: string, context: Parameters<Fleet['reconcile']>[0], started: number, stopped: number) => {
      const t = performance.now();
      const report = await fleet.reconcile(context);
      const ms = performance.now() - t;
      if (report.failed.length > 0 || report.started.length !== started || report.stopped.length !== stopped) {
        throw new Error(
          `${what}: started ${report.started.length}/${started}, stopped ${report.stopped.length}/${stopped}, failed ${JSON.stringify(report.failed)}`,
        );
      }
      return ms;
    };

    // One agent Dormant → Active, the agent the walk never visits.
    const single: number[] = [];
    const lone = id(AGENTS - 1);
    await refilled(fleet);
    // CPU of everything the fleet's pm2 daemon runs (supervisor, nats-server, agents and spares,
    // those that exited included) over the cycles: a wake, a stop and, with a pool, the spare's refill.
    const pm2Pid = Number(readFileSync(join(data, 'pm2', 'pm2.pid'), 'utf8'));
    const cycleCpu0 = treeCpuSeconds(pm2Pid);
    for (let i = 0; i < SINGLE_WAKES; i++) {
      single.push(await checked('one wake', force([lone], 1), 1, 0));
      await checked('one sleep', force([lone], 0.2), 0, 1);
      await refilled(fleet);
    }
    const cycleCpu = (treeCpuSeconds(pm2Pid) - cycleCpu0) / SINGLE_WAKES;
    // Archived → Active: the archive unpacked, then the start.
    const fromArchive: number[] = [];
    for (let i = 0; i < 3; i++) {
      const report = await fleet.reconcile(force([lone], 0.05));
      if (report.archived.length !== 1) throw new Error(`archive: ${JSON.stringify(report)}`);
      await refilled(fleet);
      const t = performance.now();
      const woke = await fleet.reconcile(force([lone], 1));
      fromArchive.push(performance.now() - t);
      if (woke.restored.length !== 1 || woke.started.length !== 1) throw new Error(`restore: ${JSON.stringify(woke)}`);
      await checked('one sleep', force([lone], 0.2), 0, 1);
    }
    const supervisorLog = join(data, 'logs', 'supervisor.log');
    const singleStarts = logLines(supervisorLog, 'agent started').filter((e) => e.agent === lone);
    const singleReady = logLines(join(data, 'logs', `${lone}.log`), 'agent ready');
    const singleStops = logLines(supervisorLog, 'agent stopped').filter((e) => e.agent === lone);
    const cycleParts = cycleCpuParts(data, lone, SINGLE_WAKES, cycleCpu * 1000);

    // A player walking, twice: first lingering at each place until the pool has refilled, then,
    // among other NPCs at other places, walking on 3 s after each step began, as a player does.
    const poolBeforeWalk = (await fleet.status()).supervisor.pool;
    const lingering = await walk(fleet, 'place', () => refilled(fleet));
    const poolAfterWalk = (await fleet.status()).supervisor.pool;
    await refilled(fleet);
    const paced = await walk(fleet, 'road', (last) => sleep(Math.max(0, PACE_MS - (performance.now() - last))));
    const poolAfterPaced = (await fleet.status()).supervisor.pool;
    const walkStarts = entriesOf(supervisorLog, 'agent started', lingering.npcs, lingering.from, lingering.to);
    const walkStops = entriesOf(supervisorLog, 'agent stopped', lingering.npcs, lingering.from, lingering.to);
    const pacedStarts = entriesOf(supervisorLog, 'agent started', paced.npcs, paced.from, paced.to);
    const pacedStops = entriesOf(supervisorLog, 'agent stopped', paced.npcs, paced.from, paced.to);
    const walkReconciles = entriesOf(supervisorLog, 'reconcile done', undefined, lingering.from, lingering.to);
    const pacedReconciles = entriesOf(supervisorLog, 'reconcile done', undefined, paced.from, paced.to);
    const firstStarts = firstAndLaterStarts([...walkStarts, ...pacedStarts]);

    // Many at once.
    const twenty = all.slice(NPCS, NPCS + 20);
    await refilled(fleet);
    const wake20 = await checked('20 wake', force(twenty, 1), 20, 0);
    await checked('20 sleep', force(twenty, 0.2), 0, 20);
    await refilled(fleet);
    const wake50 = await checked('50 wake', force(all, 1), AGENTS, 0);
    // What the 50 starts cost in CPU, read as soon as the reconcile returns: on 2 cores this
    // divided by 2 is the floor of the 50-at-once figure, whatever the supervisor does.
    const started = await fleet.status();
    const startCpu = started.agents.reduce((sum, a) => sum + (a.pid ? cpuSeconds(a.pid) : 0), 0);
    const cores = availableParallelism();
    const pool = started.supervisor.pool;

    const spawnMs = quantile(bareSpawn, 0.5);
    const singleMs = quantile(single, 0.5);
    figures.push(
      {
        metric: `one agent Dormant → Active, fleet.reconcile returns, median of ${SINGLE_WAKES}`,
        value: round(singleMs, 0),
        unit: 'ms',
        goal: poolSize ? '≤ 150 ms' : '≤ 250 ms (≤ 150 ms with the pool)',
      },
      { metric: 'ratio one wake / bare node spawn → exit (same run)', value: round(singleMs / spawnMs, 1), unit: '×' },
      {
        metric: `CPU of one wake-and-stop cycle (${poolSize ? 'a claim, a stop and the spare booted in its place' : 'a cold start and a stop'}), all the fleet's processes, mean of ${SINGLE_WAKES}`,
        value: round(cycleCpu * 1000, 0),
        unit: 'ms',
      },
      {
        metric: 'one agent Archived → Active (unpacked, then started), median of 3',
        value: round(quantile(fromArchive, 0.5), 0),
        unit: 'ms',
      },
      ...walkFigures('the player lingers until the pool has refilled (returnAfterWakes)', lingering, undefined),
      ...walkFigures(
        `the player walks on ${PACE_MS / 1000} s after each step began (returnAfterWakes)`,
        paced,
        poolSize ? '≤ 300 ms median, ≤ 600 ms p95' : undefined,
      ),
      {
        metric: "an agent's first-ever wake against a later one, supervisor side, medians over both walks",
        value: `${round(firstStarts.first, 0)} / ${round(firstStarts.later, 0)} ms = ${round(firstStarts.first / firstStarts.later, 1)}`,
        unit: '×',
        goal: '≤ 2×',
      },
      { metric: '20 agents Dormant → Active in one reconcile', value: round(wake20, 0), unit: 'ms' },
      {
        metric: `${AGENTS} agents Dormant → Active in one reconcile`,
        value: round(wake50 / 1000, 1),
        unit: 's',
        goal: poolSize ? '≤ 3 s' : '≤ 8 s (≤ 3 s with the pool)',
      },
      {
        metric: `CPU of one agent's start, mean of the ${AGENTS} started together; their total over ${cores} cores`,
        value: `${round((startCpu / AGENTS) * 1000, 0)} ms / ${round(startCpu / cores, 1)} s`,
        unit: '',
      },
      { metric: 'bare node spawn → exit, median of 5', value: round(spawnMs, 0), unit: 'ms' },
    );
    if (pool) {
      figures.push(
        {
          metric: `pool of ${pool.size}: wakes that took a spare / started cold, over the whole run`,
          value: `${pool.hits} / ${pool.misses}`,
          unit: '',
        },
        {
          metric: 'pool: the lingering walk, warm / cold wakes; the paced walk',
          value:
            poolAfterWalk && poolBeforeWalk && poolAfterPaced
              ? `${poolAfterWalk.hits - poolBeforeWalk.hits} / ${poolAfterWalk.misses - poolBeforeWalk.misses}; ${poolAfterPaced.hits - poolAfterWalk.hits} / ${poolAfterPaced.misses - poolAfterWalk.misses}`
              : '-',
          unit: '',
        },
        {
          metric: 'pool: refilling 4 spares after a step, median (the player lingers that long); one spare, the last',
          value: `${round(quantile(lingering.waited.slice(1), 0.5), 0)} / ${pool.lastRefillMs ?? '-'}`,
          unit: 'ms',
        },
      );
    } else {
      figures.push(...(await idleFigures(fleet, bare, notes)));
    }
    notes.push(
      `Wake trace, supervisor side (medians of the ${SINGLE_WAKES} single wakes, ms; each phase from the end of the one before): ${phaseMedians(singleStarts.slice(0, SINGLE_WAKES))}.`,
      `Stop trace, supervisor side (same agent, ms): ${phaseMedians(singleStops.slice(0, SINGLE_WAKES))}.`,
      `CPU of a wake-and-stop cycle by part (medians of the ${SINGLE_WAKES} single wakes, ms of CPU): ${cycleParts}.`,
      poolSize
        ? `Wake trace, agent side in the claimed spare (same wakes, ms): ${phaseMedians(singleReady.slice(0, SINGLE_WAKES))}.`
        : `Wake trace, agent side (same wakes, ms): ${phaseMedians(singleReady.slice(0, SINGLE_WAKES), (e) => ({ boot: Number(e.since_process_start_ms) - Number(e.ms) }))}; boot is Node starting and loading the bundle, before the agent's code runs.`,
      `The lingering walk's trace (medians over its ${walkStarts.length} starts and ${walkStops.length} stops, ms): starts ${phaseMedians(walkStarts)}; stops ${phaseMedians(walkStops)}; each step's reconcile ${phaseMedians(walkReconciles, (e) => ({ total: Number(e.ms) }))}.`,
      `The paced walk's trace (medians over its ${pacedStarts.length} starts and ${pacedStops.length} stops, ms): starts ${phaseMedians(pacedStarts)}; stops ${phaseMedians(pacedStops)}; each step's reconcile ${phaseMedians(pacedReconciles, (e) => ({ total: Number(e.ms) }))}.`,
      `The paced walk's steps, in order (ms): ${[...paced.firstVisits, ...paced.steps].map((v) => round(v, 0)).join(' ')}; the lingering walk's: ${[...lingering.firstVisits, ...lingering.steps].map((v) => round(v, 0)).join(' ')}.`,
      `Each walk: ${NPCS} NPCs of its own at ${PLACES} places, ${WALK_STEPS} steps of which the first ${PLACES} visit each place for the first time; [lifecycle] min_dwell_ms = 0 so the NPCs left behind go Dormant at once; a step is fleet.reconcile with returnAfterWakes, then talk_to_<id> over MCP (offline dialogue) to the 4 NPCs there together, timed from the reconcile call to the last answer.`,
    );
    if (poolSize) {
      notes.push(
        `[supervisor] pool_size = ${poolSize}. Before each single wake, each step of the lingering walk and each many-at-once reconcile the run waits until the pool is full again; the paced walk does not. 20 and 50 at once outnumber the pool: ${poolSize} wake warm and the rest cold.`,
      );
    }
    return { figures, notes };
  });
}
