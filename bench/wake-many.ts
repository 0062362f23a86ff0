import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Fleet } from '../client/fleet-client.js';
import { withBenchFleet } from './bench-fleet.js';
import { cpuSeconds } from './proc-stats.js';
import type { Figure, Scenario, ScenarioResult } from './scenario.js';
import { quantile, round } from './stats.js';
import { AGENTS, domainPkl, id, memoryMb } from './wake.js';

const IDLE_SECONDS = 10;

/** Waits until `ready` spares wait in the pool (at most `ms`); the ms it took. */
async function poolReady(fleet: Fleet, ready: number, ms: number): Promise<number> {
  const t = performance.now();
  for (;;) {
    const pool = (await fleet.status()).supervisor.pool;
    if ((pool?.ready ?? 0) >= ready) return performance.now() - t;
    if (performance.now() - t > ms) throw new Error(`the pool reached ${pool?.ready ?? 0} of ${ready} spares in ${ms} ms`);
    await sleep(250);
  }
}

/**
 * 50 wakes at once from a pool of 50 spares: what the "50 wakes ≤ 3 s" goal costs in memory and
 * idle CPU, and what it gives.
 */
export const wakeManyScenario: Scenario = {
  name: 'wake-many',
  title: '50 wakes at once from a warm pool of 50 spares',
  run: (): Promise<Omit<ScenarioResult, 'name' | 'title'>> => {
    const toml = [
      '[lifecycle]',
      'min_dwell_ms = 0',
      `max_running = ${AGENTS}`,
      `max_active = ${AGENTS}`,
      '[log]',
      'level = "info"',
      '[supervisor]',
      `pool_size = ${AGENTS}`,
    ];
    return withBenchFleet('wake-many', domainPkl(), toml, async (fleet, data) => {
      const fillMs = await poolReady(fleet, AGENTS, 180_000);
      const pids = join(data, 'pm2', 'pids');
      const spares = readdirSync(pids)
        .filter((f) => f.startsWith('thymos-spare'))
        .map((f) => Number.parseInt(readFileSync(join(pids, f), 'utf8'), 10));
      const memory = spares.map(memoryMb);
      const cpu0 = spares.reduce((sum, p) => sum + cpuSeconds(p), 0);
      await sleep(IDLE_SECONDS * 1000);
      const idleCpu = (spares.reduce((sum, p) => sum + cpuSeconds(p), 0) - cpu0) / IDLE_SECONDS;
      const all = Array.from({ length: AGENTS }, (_, i) => id(i));
      const t = performance.now();
      const report = await fleet.reconcile({ agents: Object.fromEntries(all.map((a) => [a, { relevance: 1 }])) });
      const wakeMs = performance.now() - t;
      if (report.failed.length > 0 || report.started.length !== AGENTS)
        throw new Error(`50 wake: started ${report.started.length}, failed ${JSON.stringify(report.failed)}`);
      const pool = (await fleet.status()).supervisor.pool;
      const figures: Figure[] = [
        {
          metric: `${AGENTS} agents Dormant → Active in one reconcile, all from spares`,
          value: round(wakeMs / 1000, 2),
          unit: 's',
          goal: '≤ 3 s',
        },
        { metric: 'wakes that took a spare / started cold', value: `${pool?.hits ?? '-'} / ${pool?.misses ?? '-'}`, unit: '' },
        {
          metric: `filling the pool of ${AGENTS} from empty (as many spares at once as there are cores beyond the first)`,
          value: round(fillMs / 1000, 1),
          unit: 's',
        },
        {
          metric: `a waiting spare's PSS / RSS, median of ${spares.length}; all ${spares.length} spares' PSS together`,
          value: `${round(
            quantile(
              memory.map((m) => m.pss),
              0.5,
            ),
            1,
          )} / ${round(
            quantile(
              memory.map((m) => m.rss),
              0.5,
            ),
            1,
          )} MB; ${round(
            memory.reduce((s, m) => s + m.pss, 0),
            0,
          )} MB`,
          unit: '',
        },
        {
          metric: `CPU of ${spares.length} waiting spares together, over ${IDLE_SECONDS} s`,
          value: round(idleCpu * 100, 1),
          unit: '% of one core',
        },
      ];
      return {
        figures,
        notes: [`[supervisor] pool_size = ${AGENTS}: the pool is filled before the wake; the same ${AGENTS} agents as the wake scenario.`],
      };
    });
  },
};
