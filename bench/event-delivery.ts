import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';

import type { Fleet } from '../client/fleet-client.js';
import { Pm2Names } from '../shared/config/fleet-paths.js';
import { asFleetSupervisor, fleetPids } from '../test/helpers/fleet.js';
import { withBenchFleet } from './bench-fleet.js';
import { domainText } from './domain-text.js';
import { cpuSeconds } from './proc-stats.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const SIZES = [10, 50];
/** Events measured per size, one at a time, after the warm-up. */
const EVENTS = 60;
/**
 * Events right after the wake, reported on their own: the first event a woken agent hears runs
 * its hearing path for the first time (compiled then), and its first deferred write follows
 * within [events] store_delay_ms (1 s), so the first ten (about a second) are a wake's cost.
 */
const WARM_UP = 10;
/** How the figures were taken until 2026-11-25: the first 30 events after the wake. */
const FIRST = 30;
const REPLAY = 10_000;
const PLACES = 5;
/** Events published at one place for the CPU figures. */
const LOCAL_EVENTS = 200;
/** Agents tagged `few`: the hearers of `few` events. */
const FEW = 5;

/** Agents at 5 places; every one hears `bench` events, those at a place hear its `local` events, the first 5 hear `few` events. */
function domainPkl(n: number): string {
  return domainText(
    n,
    (i) => ({
      id: `e_${String(i).padStart(3, '0')}`,
      name: `Listener ${i}`,
      more: `homeLocation = "place_${i % PLACES}"; tags { ${i < FEW ? '"few"' : ''} }`,
    }),
    [
      'eventFilters {',
      '  new { eventTags { "bench" } }',
      '  new { eventTags { "local" }; sameLocation = true }',
      '  new { agentTags { "few" }; eventTags { "few" } }',
      '}',
    ],
  );
}

/** SERIES=1 in the environment prints every event's delays as it goes: where the slow ones are. */
const SERIES = process.env.SERIES === '1';

/** Publishes one event and resolves with each hearer's delay until its memories resource said it changed. */
async function deliver(
  fleet: Fleet,
  hearers: readonly string[],
  waiters: Map<string, () => void>,
  i: number,
  tag = 'bench',
): Promise<number[]> {
  const t0 = performance.now();
  const arrivals = hearers.map((id) => new Promise<number>((resolve) => waiters.set(id, () => resolve(performance.now() - t0))));
  await fleet.publish({ type: 'bench.tick', tags: [tag], payload: { summary: `Bench event ${i}` } });
  const acked = performance.now() - t0;
  const delays = await Promise.all(arrivals);
  for (const id of hearers) waiters.delete(id);
  if (SERIES) {
    const d = [...delays].sort((x, y) => x - y);
    console.log(
      `event ${i} to ${hearers.length}: publish acknowledged ${Math.round(acked)} ms; remembered first / median / last ${Math.round(d[0]!)} / ${Math.round(quantile(d, 0.5))} / ${Math.round(d.at(-1)!)} ms; at ${new Date().toISOString().slice(11, 23)}`,
    );
  }
  return delays;
}

/** How many memories an agent holds, from its state resource. */
async function memoryCount(fleet: Fleet, id: string): Promise<number> {
  const state = await (await fleet.agent(id)).readResource({ uri: `agent://${id}/state` });
  return (JSON.parse((state.contents[0] as { text: string }).text) as { memory_count: number }).memory_count;
}

/**
 * Resolves once every event published so far is routed and every copy the hearers were given is
 * acknowledged: their memories are in their databases (acknowledged after the write). Asks
 * nats-server only, so the hearers spend nothing on being watched.
 */
async function allStored(natsUrl: string, data: string, hearers: readonly string[]): Promise<void> {
  const nc = await natsConnect({ servers: natsUrl, ...asFleetSupervisor(data) });
  try {
    const jsm = await jetstreamManager(nc);
    const deadline = performance.now() + 120_000;
    for (;;) {
      const router = await jsm.consumers.info('THYMOS_EVENTS', 'events_router');
      const pending = await Promise.all(hearers.map((id) => jsm.consumers.info('THYMOS_HEARD', `heard_${id}`)));
      if (router.num_pending + router.num_ack_pending === 0 && pending.every((c) => c.num_pending + c.num_ack_pending === 0)) return;
      if (performance.now() > deadline)
        throw new Error(`hearers still storing after 120 s: ${pending.map((c) => c.num_pending + c.num_ack_pending).join(', ')}`);
      await sleep(50);
    }
  } finally {
    await nc.close();
  }
}

/** CPU seconds of each process, read from /proc. */
const cpuOf = (pids: readonly number[]) => pids.reduce((sum, p) => sum + cpuSeconds(p), 0);

/**
 * The CPU an event costs: 200 events at place_0 (its 10 agents hear them, the other 40 do not),
 * with the CPU each group and the supervisor (the router) spent on them, less what they spend idle
 * over as long. The wait for the hearers to store them asks nats-server (`allStored`), not the
 * hearers; their memory counts are checked once, after the CPU is read.
 */
async function hearingCost(fleet: Fleet, data: string, ids: readonly string[], notified: Map<string, number>): Promise<Figure[]> {
  const status = await fleet.status();
  const pidOf = new Map(status.agents.map((a) => [a.id, a.pid ?? 0]));
  const hearers = ids.filter((_, i) => i % PLACES === 0);
  const others = ids.filter((id) => !hearers.includes(id));
  const groups = {
    hearers: hearers.map((id) => pidOf.get(id)!),
    others: others.map((id) => pidOf.get(id)!),
    supervisor: [status.supervisor.pid],
  };
  const sample = () => ({
    hearers: cpuOf(groups.hearers),
    others: cpuOf(groups.others),
    supervisor: cpuOf(groups.supervisor),
    at: performance.now(),
  });
  const before = new Map(await Promise.all(hearers.map(async (id) => [id, await memoryCount(fleet, id)] as const)));
  const idle0 = sample();
  await sleep(3000);
  const idle1 = sample();
  const notes0 = hearers.reduce((n, id) => n + (notified.get(id) ?? 0), 0);
  for (let i = 0; i < LOCAL_EVENTS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) =>
        fleet.publish({ type: 'bench.local', tags: ['local'], location: 'place_0', payload: { summary: `Local news ${i + j}` } }),
      ),
    );
  }
  await allStored(status.supervisor.nats_url, data, hearers);
  const busy = sample();
  const short = (await Promise.all(hearers.map(async (id) => [id, (await memoryCount(fleet, id)) - before.get(id)!] as const))).filter(
    ([, n]) => n !== LOCAL_EVENTS,
  );
  if (short.length > 0) throw new Error(`hearers that did not remember the ${LOCAL_EVENTS} events once each: ${JSON.stringify(short)}`);
  const batches = (hearers.reduce((n, id) => n + (notified.get(id) ?? 0), 0) - notes0) / hearers.length;
  const seconds = (busy.at - idle1.at) / 1000;
  const idleRate = (k: 'hearers' | 'others' | 'supervisor') => ((idle1[k] - idle0[k]) / (idle1.at - idle0.at)) * 1000;
  const perEvent = (k: 'hearers' | 'others' | 'supervisor', count: number) =>
    (Math.max(0, busy[k] - idle1[k] - idleRate(k) * seconds) / count / LOCAL_EVENTS) * 1000;
  return [
    {
      metric: `CPU per event in each agent that hears it (${LOCAL_EVENTS} events at one place, ${hearers.length} hearers, idle subtracted)`,
      value: round(perEvent('hearers', hearers.length), 2),
      unit: 'ms',
      goal: '≤ 2 ms',
    },
    { metric: `… batches each hearer took them in (one notification each), of ${LOCAL_EVENTS} events`, value: round(batches, 1), unit: '' },
    {
      metric: `CPU per event in each agent that does not hear it (the other ${others.length})`,
      value: round(perEvent('others', others.length), 3),
      unit: 'ms',
      goal: '≤ 0.05 ms',
    },
    {
      metric: 'CPU per event in the supervisor: the router and the embedding service answering the 10 hearers',
      value: round(perEvent('supervisor', 1), 2),
      unit: 'ms',
    },
  ];
}

/**
 * A real fleet under pm2: N agents whose filter takes every `bench` event. An event is
 * published through `fleet.publish` (JetStream); each agent's MCP client, subscribed to
 * `agent://<id>/memories`, timestamps the notification the agent sends once the event is a
 * stored memory. Then one agent sleeps through 10,000 events and wakes.
 */
export const eventDeliveryScenario: Scenario = {
  name: 'event-delivery',
  title: 'World events: published → remembered by every listening agent, and replay on wake',
  async run() {
    const n = Math.max(...SIZES);
    const ids = Array.from({ length: n }, (_, i) => `e_${String(i).padStart(3, '0')}`);
    const figures: Figure[] = [];
    const notes: string[] = [];
    const toml = ['[lifecycle]', 'min_dwell_ms = 0', `max_running = ${n}`, `max_active = ${n}`, '[log]', 'level = "info"'];
    await withBenchFleet('events', domainPkl(n), toml, async (fleet, data) => {
      for (const size of SIZES) {
        const active = ids.slice(0, size);
        const report = await fleet.reconcile({ agents: Object.fromEntries(ids.map((id, i) => [id, { relevance: i < size ? 1 : 0.2 }])) });
        if (report.failed.length) throw new Error(JSON.stringify(report.failed));
        const waiters = new Map<string, () => void>();
        const notified = new Map<string, number>();
        for (const id of active) {
          const client = await fleet.agent(id);
          client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
            if (note.params.uri !== `agent://${id}/memories`) return;
            notified.set(id, (notified.get(id) ?? 0) + 1);
            waiters.get(id)?.();
          });
          await client.subscribeResource({ uri: `agent://${id}/memories` });
        }
        const pids = {
          hearers: (await fleet.status()).agents.filter((a) => active.includes(a.id)).map((a) => a.pid ?? 0),
          supervisor: [(await fleet.status()).supervisor.pid],
          nats: [fleetPids(data).apps.get(Pm2Names.nats) ?? 0],
        };
        const byEvent: number[][] = [];
        for (let i = 0; i < WARM_UP; i++) byEvent.push(await deliver(fleet, active, waiters, i));
        const cpu0 = {
          hearers: cpuOf(pids.hearers),
          supervisor: cpuOf(pids.supervisor),
          nats: cpuOf(pids.nats),
          client: process.cpuUsage(),
          at: performance.now(),
        };
        for (let i = WARM_UP; i < WARM_UP + EVENTS; i++) byEvent.push(await deliver(fleet, active, waiters, i));
        const delays = byEvent.slice(WARM_UP).flat();
        await allStored((await fleet.status()).supervisor.nats_url, data, active);
        const spent = {
          hearers: cpuOf(pids.hearers) - cpu0.hearers,
          supervisor: cpuOf(pids.supervisor) - cpu0.supervisor,
          nats: cpuOf(pids.nats) - cpu0.nats,
          client: (process.cpuUsage(cpu0.client).user + process.cpuUsage(cpu0.client).system) / 1e6,
        };
        const wall = (performance.now() - cpu0.at) / 1000;
        const per = (x: number) => round((x / EVENTS) * 1000, 1);
        figures.push({
          metric: `CPU per lone event that ${size} agents hear: all hearers together / supervisor / nats-server / this client (its MCP sessions); all of it as a share of the 2 cores over the run`,
          value: `${per(spent.hearers)} / ${per(spent.supervisor)} / ${per(spent.nats)} / ${per(spent.client)} ms; ${Math.round(((spent.hearers + spent.supervisor + spent.nats + spent.client) / wall / availableParallelism()) * 100)} %`,
          unit: '',
        });
        const first = byEvent[0]!;
        const warm = byEvent.slice(0, WARM_UP).flat();
        figures.push({ metric: `published → remembered, ${size} agents, p50`, value: round(quantile(delays, 0.5), 1), unit: 'ms' });
        figures.push({
          metric: `published → remembered, ${size} agents, p95`,
          value: round(quantile(delays, 0.95), 1),
          unit: 'ms',
          goal: size === 50 ? '≤ 150 ms' : undefined,
        });
        figures.push({
          metric: `… the first event after the wake: p50 / max; the first ${WARM_UP} (the warm-up): p95; the first ${FIRST} (as measured until 2026-11-25): p95`,
          value: `${round(quantile(first, 0.5), 1)} / ${round(Math.max(...first), 1)} ms; ${round(quantile(warm, 0.95), 1)} ms; ${round(quantile(byEvent.slice(0, FIRST).flat(), 0.95), 1)} ms`,
          unit: '',
        });
        if (size !== n) continue;
        const few: number[] = [];
        for (let i = 0; i < EVENTS; i++) few.push(...(await deliver(fleet, active.slice(0, FEW), waiters, i, 'few')));
        figures.push({
          metric: `published → remembered, ${FEW} of ${size} agents hear it, p95`,
          value: round(quantile(few, 0.95), 1),
          unit: 'ms',
          goal: '≤ 25 ms',
        });
        figures.push(...(await hearingCost(fleet, data, active, notified)));
      }
      // Every agent sleeps (their consumers retain); the router alone works; then one wakes to what it missed.
      const sleeper = ids[0]!;
      await fleet.reconcile({ agents: Object.fromEntries(ids.map((id) => [id, { relevance: 0.2 }])) });
      const status = await fleet.status();
      const nc = await natsConnect({ servers: status.supervisor.nats_url, ...asFleetSupervisor(data) });
      try {
        const jsm = await jetstreamManager(nc);
        const routed = async () => {
          for (;;) {
            const c = await jsm.consumers.info('THYMOS_EVENTS', 'events_router');
            if (c.num_pending === 0 && c.num_ack_pending === 0) return;
            await sleep(20);
          }
        };
        const supervisor = [status.supervisor.pid];
        const c0 = cpuOf(supervisor);
        for (let i = 0; i < LOCAL_EVENTS; i += 50) {
          await Promise.all(
            Array.from({ length: 50 }, (_, j) =>
              fleet.publish({ type: 'bench.local', tags: ['local'], location: 'place_0', payload: { summary: `Quiet news ${i + j}` } }),
            ),
          );
        }
        await routed();
        const routerLocal = ((cpuOf(supervisor) - c0) / LOCAL_EVENTS) * 1000;
        const t = performance.now();
        const c1 = cpuOf(supervisor);
        for (let i = 0; i < REPLAY; i += 200) {
          await Promise.all(
            Array.from({ length: 200 }, (_, j) =>
              fleet.publish({ id: `r-${i + j}`, type: 'bench.missed', tags: ['bench'], payload: { summary: `Missed ${i + j}` } }),
            ),
          );
        }
        const publishMs = performance.now() - t;
        await routed();
        const routeMs = performance.now() - t;
        const routerAll = ((cpuOf(supervisor) - c1) / REPLAY) * 1000;
        const t1 = performance.now();
        await fleet.start(sleeper);
        const wakeMs = performance.now() - t1;
        const log = readFileSync(join(data, 'logs', `${sleeper}.log`), 'utf8')
          .split('\n')
          .filter((l) => l.includes('agent ready'))
          .at(-1)!;
        const replayMs = (JSON.parse(log) as { phases: { replay: number } }).phases.replay;
        figures.push(
          {
            metric: `router CPU per event, every agent Dormant (${LOCAL_EVENTS} events at one place, ${n / PLACES} hearers each)`,
            value: round(routerLocal, 2),
            unit: 'ms',
          },
          {
            metric: `publish ${REPLAY.toLocaleString('en')} events that all ${n} agents hear, 200 in flight`,
            value: Math.round(publishMs),
            unit: 'ms',
          },
          {
            metric: `… routed to all ${n} (${(REPLAY * n).toLocaleString('en')} copies), from the first publish; router CPU per event`,
            value: `${Math.round(routeMs)} ms; ${round(routerAll, 2)} ms`,
            unit: '',
          },
          { metric: `replay of ${REPLAY.toLocaleString('en')} missed events on wake (agent's replay phase)`, value: replayMs, unit: 'ms' },
          {
            metric: `wake with ${REPLAY.toLocaleString('en')} missed events (start to ready, verified)`,
            value: Math.round(wakeMs),
            unit: 'ms',
          },
        );
      } finally {
        await nc.close();
      }
      notes.push(
        `${EVENTS} events per size, one at a time, after ${WARM_UP} right after the wake (the agents of each size are woken just before; those ${WARM_UP} are reported on their own, and the CPU figures leave them out); a delay is from the publish call to the MCP notification that the agent's memories changed, so it includes JetStream storage, the router's copy to each hearer, delivery to its durable consumer, the memory made recallable (index and records) and the notification; the SurrealDB write follows within [events] store_delay_ms (1000 ms, each agent between half of it and all of it), together with the others heard meanwhile, and the copy is acknowledged after it. The CPU figures are read once every hearer has acknowledged every copy, so they include those writes. The other agents of the fleet were Dormant (their consumers retain what they hear). CPU figures are read from /proc/<pid>/stat; the supervisor's include the embedding service answering the hearers' vector requests, except the router-only ones, taken while every agent is Dormant.`,
        'Replay fetches 256 events at a time, writes each batch in one SurrealDB statement and acknowledges it after the write.',
      );
    });
    return { figures, notes };
  },
};
