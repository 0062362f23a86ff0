/**
 * Where a lone heard event's CPU goes in one hearer: a fleet of N agents that all hear every
 * `bench` event, events published one at a time (the next once every hearer announced the last,
 * then a pause). After a warm-up, the first agent's CPU is read per thread from
 * /proc/<pid>/task/<tid>/stat over as long idle and over the events (idle subtracted); then the
 * inspector is opened on that agent (SIGUSR1, 127.0.0.1:9229) and the same number of events is
 * profiled, the profile written to PROFILE.
 *
 *   node --import tsx bench/profile-hearer.ts
 *
 * Settings from the environment: N agents (10), WARM events first (40), EVENTS per window (100),
 * GAP ms between events (150; 0: no idle window, so nothing subtracted), PROFILE path (no profile when unset), SERIES=1 prints each event's fastest, median and
 * slowest hearer, KEEP=1 keeps the fleet's folder (its logs) and prints where.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import WebSocket from 'ws';

import type { Fleet } from '../client/fleet-client.js';
import { asFleetSupervisor } from '../test/helpers/fleet.js';
import { withBenchFleet } from './bench-fleet.js';
import { domainText } from './domain-text.js';
import { cpuSeconds } from './proc-stats.js';
import { quantile, round } from './stats.js';

const N = Number(process.env.N ?? 10);
const EVENTS = Number(process.env.EVENTS ?? 100);
const GAP = Number(process.env.GAP ?? 150);
const WARM_UP = Number(process.env.WARM ?? 40);
/** Events published together in each round (0: one at a time, each waited for). */
const BURST = Number(process.env.BURST ?? 0);
/** Events in a measured window. */
let notes = 0;
const PER_WINDOW = EVENTS * Math.max(1, BURST);

function domainPkl(n: number): string {
  return domainText(n, (i) => ({ id: `e_${String(i).padStart(3, '0')}`, name: `Listener ${i}`, more: 'homeLocation = "place_0"' }), [
    'eventFilters {',
    '  new { eventTags { "bench" } }',
    '}',
  ]);
}

/** CPU ms (user + system) of each of a process's threads, summed by thread name. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
  }
  return out;
}

/** A DevTools protocol session with a running Node process, its inspector opened by SIGUSR1. */
async function inspect(pid: number): Promise<{ send(method: string, params?: object): Promise<Record<string, unknown>>; close(): void }> {
  process.kill(pid, 'SIGUSR1');
  const deadline = performance.now() + 10_000;
  let url: string | undefined;
  while (!url) {
    if (performance.now() > deadline) throw new Error(`the inspector of ${pid} did not open on 127.0.0.1:9229`);
    try {
      const targets = (await (await fetch('http://127.0.0.1:9229/json/list')).json()) as Array<{ webSocketDebuggerUrl: string }>;
      url = targets[0]?.webSocketDebuggerUrl;
    } catch {
      await sleep(100);
    }
  }
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const waiting = new Map<number, (result: Record<string, unknown>) => void>();
  socket.on('message', (data) => {
    const msg = JSON.parse(String(data)) as { id?: number; result?: Record<string, unknown> };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result ?? {});
  });
  let next = 0;
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const id = ++next;
        waiting.set(id, resolve);
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

/** Resolves once every hearer has taken and acknowledged all its copies (acknowledged once stored). */
async function allAcknowledged(jsm: JetStreamManager, ids: readonly string[]): Promise<void> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const infos = await Promise.all(ids.map((id) => jsm.consumers.info('THYMOS_HEARD', `heard_${id}`)));
    if (infos.every((c) => c.num_pending === 0 && c.num_ack_pending === 0)) return;
    if (performance.now() > deadline) throw new Error('hearers still storing after 60 s');
    await sleep(50);
  }
}

/** BURST events published together; resolves once every hearer stored them all, then pauses GAP ms. */
async function oneBurst(fleet: Fleet, jsm: JetStreamManager, ids: readonly string[], i: number): Promise<number[]> {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: BURST }, (_, j) =>
      fleet.publish({ type: 'bench.tick', tags: ['bench'], payload: { summary: `Bench event ${i}.${j} about the wolves near the mill` } }),
    ),
  );
  await allAcknowledged(jsm, ids);
  await sleep(GAP);
  return [performance.now() - t0];
}

/** Publishes one event and resolves with each hearer's delay until it announced the event, then pauses GAP ms. */
async function oneEvent(fleet: Fleet, ids: readonly string[], waiters: Map<string, () => void>, i: number): Promise<number[]> {
  const t0 = performance.now();
  const heard = (id: string, resolve: (ms: number) => void) => () => {
    const ms = performance.now() - t0;
    // A hearer over a second late is named, with the time, to find in its log (KEEP=1 keeps the logs).
    if (ms > 1000) console.log('slow', id, i, Math.round(ms), new Date().toISOString());
    resolve(ms);
  };
  const arrivals = ids.map((id) => new Promise<number>((resolve) => waiters.set(id, heard(id, resolve))));
  await fleet.publish({ type: 'bench.tick', tags: ['bench'], payload: { summary: `Bench event ${i} about the wolves near the mill` } });
  const delays = (await Promise.all(arrivals)).sort((a, b) => a - b);
  if (process.env.SERIES) console.log(i, Math.round(delays[0]!), Math.round(quantile(delays, 0.5)), Math.round(delays.at(-1)!));
  await sleep(GAP);
  return delays;
}

/** Per-thread CPU ms per event over `run`, less what the same threads spent idle over `idle` ms. */
async function cpuPerEvent(pid: number, idleMs: number, run: () => Promise<void>): Promise<Map<string, number>> {
  const i0 = threadCpu(pid);
  const idleStart = performance.now();
  await sleep(idleMs);
  const i1 = threadCpu(pid);
  const idleWall = performance.now() - idleStart;
  const b0 = threadCpu(pid);
  const busyStart = performance.now();
  await run();
  const b1 = threadCpu(pid);
  const scale = idleWall > 0 ? (performance.now() - busyStart) / idleWall : 0;
  return new Map(
    [...b1].map(([name, ms]) => [name, (ms - (b0.get(name) ?? 0) - ((i1.get(name) ?? 0) - (i0.get(name) ?? 0)) * scale) / PER_WINDOW]),
  );
}

async function main(): Promise<void> {
  const ids = Array.from({ length: N }, (_, i) => `e_${String(i).padStart(3, '0')}`);
  const toml = ['[lifecycle]', 'min_dwell_ms = 0', `max_running = ${N}`, `max_active = ${N}`, '[log]', 'level = "info"'];
  await withBenchFleet('profile', domainPkl(N), toml, async (fleet, data) => {
    await fleet.reconcile({ agents: Object.fromEntries(ids.map((id) => [id, { relevance: 1 }])) });
    const waiters = new Map<string, () => void>();
    for (const id of ids) {
      const client = await fleet.agent(id);
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
        if (note.params.uri === `agent://${id}/memories`) {
          notes++;
          waiters.get(id)?.();
        }
      });
      await client.subscribeResource({ uri: `agent://${id}/memories` });
    }
    const nc = await natsConnect({ servers: (await fleet.status()).supervisor.nats_url, ...asFleetSupervisor(data) });
    const jsm = await jetstreamManager(nc);
    const oneRound = (n: number) => (BURST > 0 ? oneBurst(fleet, jsm, ids, n) : oneEvent(fleet, ids, waiters, n));
    try {
      let i = 0;
      for (; i < WARM_UP; i++) await oneRound(i);
      const pids = (await fleet.status()).agents.map((a) => a.pid ?? 0);
      const pid = (await fleet.status()).agents.find((a) => a.id === ids[0])!.pid!;
      const delays: number[] = [];
      const all0 = pids.reduce((sum, p) => sum + cpuSeconds(p), 0);
      const cpu = await cpuPerEvent(pid, EVENTS * GAP, async () => {
        for (const end = i + EVENTS; i < end; i++) delays.push(...(await oneRound(i)));
      });
      for (const [name, ms] of cpu) console.log(`${name.padEnd(16)} ${round(ms, 2)} ms per event`);
      console.log(
        `all threads      ${round(
          [...cpu.values()].reduce((a, b) => a + b, 0),
          2,
        )} ms per event (idle subtracted)`,
      );
      console.log(
        `all ${N} hearers together: ${round(((pids.reduce((sum, p) => sum + cpuSeconds(p), 0) - all0) / PER_WINDOW) * 1000, 1)} ms per event (idle not subtracted)`,
      );
      console.log(
        `${BURST > 0 ? `${BURST} events published together → stored by all` : 'published → announced by all'} ${N}: p50 ${round(quantile(delays, 0.5), 1)} ms, p95 ${round(quantile(delays, 0.95), 1)} ms`,
      );
      console.log('notifications per event per hearer', notes / (i * Math.max(1, BURST)) / N);
      const path = process.env.PROFILE;
      if (!path) return;
      const session = await inspect(pid);
      try {
        await session.send('Profiler.enable');
        await session.send('Profiler.setSamplingInterval', { interval: 200 });
        await session.send('Profiler.start');
        for (const end = i + EVENTS; i < end; i++) await oneRound(i);
        const { profile } = await session.send('Profiler.stop');
        writeFileSync(path, JSON.stringify(profile));
        console.log(`profile of ${EVENTS} events written to ${path}`);
      } finally {
        session.close();
      }
    } finally {
      await nc.close();
    }
  });
}

await main();
