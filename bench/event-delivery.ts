import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import type { Fleet } from '../client/fleet-client.js';
import { REPO_ROOT } from '../test/helpers/workspace.js';
import { withBenchFleet } from './bench-fleet.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const SIZES = [10, 50];
const EVENTS = 30;
const REPLAY = 10_000;

function domainPkl(n: number): string {
  const lines = [`amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}`, 'agents {'];
  for (let i = 0; i < n; i++) lines.push(`  ["e_${String(i).padStart(3, '0')}"] { persona { name = "Listener ${i}" } }`);
  lines.push('}', 'eventFilters {', '  new { eventTags { "bench" } }', '}');
  return lines.join('\n');
}

/** Publishes one event and resolves with each agent's delay until its memories resource said it changed. */
async function deliver(fleet: Fleet, clients: Map<string, Client>, waiters: Map<string, () => void>, i: number): Promise<number[]> {
  const t0 = performance.now();
  const arrivals = [...clients.keys()].map((id) => new Promise<number>((resolve) => waiters.set(id, () => resolve(performance.now() - t0))));
  await fleet.publish({ type: 'bench.tick', tags: ['bench'], payload: { summary: `Bench event ${i}` } });
  return Promise.all(arrivals);
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
        const clients = new Map<string, Client>();
        const waiters = new Map<string, () => void>();
        for (const id of active) {
          const client = await fleet.agent(id);
          client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
            if (note.params.uri === `agent://${id}/memories`) waiters.get(id)?.();
          });
          await client.subscribeResource({ uri: `agent://${id}/memories` });
          clients.set(id, client);
        }
        const delays: number[] = [];
        for (let i = 0; i < EVENTS; i++) delays.push(...(await deliver(fleet, clients, waiters, i)));
        const goal = size === 50 ? '≤ 25 ms p95' : undefined;
        figures.push({ metric: `published → remembered, ${size} agents, p50`, value: round(quantile(delays, 0.5), 1), unit: 'ms' });
        figures.push({ metric: `published → remembered, ${size} agents, p95`, value: round(quantile(delays, 0.95), 1), unit: 'ms', goal });
      }
      // Every agent sleeps (their consumers retain); one wakes to what it missed.
      const sleeper = ids[0]!;
      await fleet.reconcile({ agents: Object.fromEntries(ids.map((id) => [id, { relevance: 0.2 }])) });
      const t = performance.now();
      for (let i = 0; i < REPLAY; i += 200) {
        await Promise.all(Array.from({ length: 200 }, (_, j) => fleet.publish({ id: `r-${i + j}`, type: 'bench.missed', tags: ['bench'], payload: { summary: `Missed ${i + j}` } })));
      }
      const publishMs = performance.now() - t;
      const t1 = performance.now();
      await fleet.start(sleeper);
      const wakeMs = performance.now() - t1;
      const log = readFileSync(join(data, 'logs', `${sleeper}.log`), 'utf8').split('\n').filter((l) => l.includes('agent ready')).at(-1)!;
      const replayMs = (JSON.parse(log) as { phases: { replay: number } }).phases.replay;
      figures.push({ metric: `publish ${REPLAY.toLocaleString('en')} events, 200 in flight, ${n} durable consumers retaining`, value: Math.round(publishMs), unit: 'ms' });
      figures.push({ metric: `replay of ${REPLAY.toLocaleString('en')} missed events on wake (agent's replay phase)`, value: replayMs, unit: 'ms' });
      figures.push({ metric: `wake with ${REPLAY.toLocaleString('en')} missed events (start to ready, verified)`, value: Math.round(wakeMs), unit: 'ms' });
      notes.push(
        `${EVENTS} events per size, one at a time; a delay is from the publish call to the MCP notification that the agent's memories changed, so it includes JetStream storage, delivery to each durable consumer, the filter, the SurrealDB write and the notification. The other agents of the fleet were Dormant (their consumers retain the events).`,
        'Replay fetches 256 events at a time, writes each batch in one SurrealDB statement and acknowledges it after the write.',
      );
    });
    return { figures, notes };
  },
};
