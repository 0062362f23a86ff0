import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freemem, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { connect } from '../client/fleet-client.js';
import { loadConfig } from '../shared/config/thymos-config.js';
import { downFleet, upFleet } from '../supervisor/launch/fleet-launcher.js';
import { fleetPids, killFleet } from '../test/helpers/fleet.js';
import { domainText } from './domain-text.js';
import { cpuSeconds } from './proc-stats.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

/** How many agents the scale step runs at once; `THYMOS_BENCH_SCALE` overrides. */
const SCALE = Number(process.env.THYMOS_BENCH_SCALE ?? 60);
const TWENTY = 20;
/** Transitions at once; `THYMOS_BENCH_CONCURRENCY` overrides `[supervisor] concurrency` (default 4). */
const CONCURRENCY = process.env.THYMOS_BENCH_CONCURRENCY;

function rssMb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) / 1024;
  } catch {
    return Number.NaN;
  }
}

function memAvailableMb(): number {
  const m = /MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) / 1024 : freemem() / 2 ** 20;
}

/** A Pkl domain of n plain agents. */
function domainPkl(n: number): string {
  return domainText(n, (i) => ({ id: `w_${String(i).padStart(3, '0')}`, name: `Worker ${i}`, more: `homeLocation = "hall_${i % 5}"` }));
}

/**
 * A real fleet under pm2 in a temp directory: `thymos up`, 20 agents Dormant → Active and
 * back, idle memory of each part, then as many agents running at once as SCALE asks.
 */
export const fleetScaleScenario: Scenario = {
  name: 'fleet-scale',
  title: 'Supervisor: a fleet under pm2 — start/stop wall time, idle memory, agents held at once',
  async run() {
    const n = Math.max(TWENTY, SCALE);
    const dir = mkdtempSync(join(tmpdir(), 'thymos-bench-fleet-'));
    const data = join(dir, 'data');
    writeFileSync(join(dir, 'world.pkl'), domainPkl(n));
    writeFileSync(
      join(dir, 'thymos.toml'),
      [
        'data_dir = "data"',
        '[domain]',
        'schema = "world.pkl"',
        '[lifecycle]',
        'min_dwell_ms = 0',
        `max_running = ${n}`,
        `max_active = ${n}`,
        '[supervisor]',
        ...(CONCURRENCY ? [`concurrency = ${CONCURRENCY}`] : []),
        '[log]',
        'level = "warn"',
      ].join('\n'),
    );
    const config = loadConfig(join(dir, 'thymos.toml'));
    const ids = Array.from({ length: n }, (_, i) => `w_${String(i).padStart(3, '0')}`);
    const force = (count: number, relevance: number) => ({
      agents: Object.fromEntries(ids.slice(0, count).map((id) => [id, { relevance }])),
    });
    const figures: Figure[] = [];
    const notes: string[] = [];
    const availableBefore = memAvailableMb();
    try {
      let t = performance.now();
      await upFleet(config);
      figures.push({
        metric: 'thymos up (pm2 daemon, nats-server, supervisor answering)',
        value: Math.round(performance.now() - t),
        unit: 'ms',
      });
      const fleet = await connect(config);
      try {
        const wakeTimes: number[] = [];
        const sleepTimes: number[] = [];
        for (let round_ = 0; round_ < 3; round_++) {
          t = performance.now();
          const up = await fleet.reconcile(force(TWENTY, 1));
          wakeTimes.push(performance.now() - t);
          if (up.started.length !== TWENTY || up.failed.length) throw new Error(`start: ${JSON.stringify(up.failed)}`);
          if (round_ === 0) {
            await sleep(5000);
            const status = await fleet.status();
            const agentRss = status.agents.filter((a) => a.pid).map((a) => rssMb(a.pid!));
            const { daemon, apps } = fleetPids(data);
            figures.push({ metric: 'idle RSS per agent, median of 20', value: round(quantile(agentRss, 0.5), 1), unit: 'MB' });
            figures.push({ metric: 'pm2 daemon RSS (20 apps)', value: round(rssMb(daemon!), 1), unit: 'MB' });
            figures.push({ metric: 'supervisor RSS', value: round(rssMb(status.supervisor.pid), 1), unit: 'MB' });
            figures.push({ metric: 'nats-server RSS', value: round(rssMb(apps.get('thymos-nats')!), 1), unit: 'MB' });
          }
          t = performance.now();
          const down = await fleet.reconcile(force(TWENTY, 0.2));
          sleepTimes.push(performance.now() - t);
          if (down.stopped.length !== TWENTY || down.failed.length) throw new Error(`stop: ${JSON.stringify(down.failed)}`);
        }
        figures.push({
          metric: '20 agents Dormant → Active (reconcile wall time), median of 3',
          value: Math.round(quantile(wakeTimes, 0.5)),
          unit: 'ms',
        });
        figures.push({
          metric: '20 agents Active → Dormant (snapshot, stop), median of 3',
          value: Math.round(quantile(sleepTimes, 0.5)),
          unit: 'ms',
        });

        t = performance.now();
        const scale = await fleet.reconcile(force(n, 1));
        const scaleMs = performance.now() - t;
        const running = (await fleet.status()).agents.filter((a) => a.state === 'active').length;
        await sleep(5000);
        const status = await fleet.status();
        const pids = status.agents.filter((a) => a.pid).map((a) => a.pid!);
        const cpu0 = pids.reduce((s, p) => s + cpuSeconds(p), 0);
        await sleep(10_000);
        const cpuIdle = (pids.reduce((s, p) => s + cpuSeconds(p), 0) - cpu0) / 10;
        const perAgent = quantile(pids.map(rssMb), 0.5);
        const availableNow = memAvailableMb();
        const memoryBound = Math.floor((availableBefore - 1024) / perAgent);
        figures.push({ metric: `agents running at once (asked ${n})`, value: running, unit: 'agents' });
        figures.push({ metric: `${n} agents Dormant → Active`, value: round(scaleMs / 1000, 1), unit: 's' });
        figures.push({ metric: `CPU of ${running} idle agents together`, value: round(cpuIdle * 100, 1), unit: '% of one core' });
        figures.push({ metric: 'most agents by memory (MemAvailable before − 1 GiB) / RSS per agent', value: memoryBound, unit: 'agents' });
        notes.push(
          `The scale step ran ${running} of ${n} agents (failed: ${scale.failed.length}); MemAvailable went from ${Math.round(availableBefore)} MB to ${Math.round(availableNow)} MB of ${Math.round(totalmem() / 2 ** 20)} MB.`,
          `Memory is the bound: at ${round(perAgent, 0)} MB per idle agent this machine holds about ${memoryBound} running agents; idle CPU (heartbeats every 2 s) is ${round(cpuIdle * 100, 1)}% of one core for ${running}, so 2 cores are not the limit for idle agents — starting them is (${round(scaleMs / n, 0)} ms per agent with 4 starts at a time).`,
          'Start wall time counts pm2 start, the agent opening its SurrealDB and listening, its NATS ready message, and an MCP initialize answered by the agent itself (readiness is verified, not taken from pm2).',
        );
      } finally {
        await fleet.close();
      }
      t = performance.now();
      await downFleet(config);
      figures.push({
        metric: `thymos down with ${n} agents running (snapshot each, stop all)`,
        value: round((performance.now() - t) / 1000, 1),
        unit: 's',
      });
    } finally {
      await killFleet(data);
      rmSync(dir, { recursive: true, force: true });
    }
    return { figures, notes };
  },
};
