import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { connect, type Fleet } from '../client/fleet-client.js';
import { loadConfig } from '../shared/config/thymos-config.js';
import { upFleet } from '../supervisor/launch/fleet-launcher.js';
import { killFleet } from '../test/helpers/fleet.js';
import { startNatsCluster } from '../test/helpers/nats-cluster.js';
import { domainText } from './domain-text.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const ROUNDS = 3;
/** The default lease: what a user's fleet fails over in. */
const LEASE_MS = 10_000;

/** A host's folder: the same fleet, its own `[host] name` and data directory. */
function hostDir(name: string, urls: string): string {
  const dir = mkdtempSync(join(tmpdir(), `thymos-bench-failover-${name}-`));
  writeFileSync(
    join(dir, 'world.pkl'),
    domainText(4, (i) => ({ id: `w_${i}`, name: `Worker ${i}` })),
  );
  writeFileSync(
    join(dir, 'thymos.toml'),
    [
      'data_dir = "data"',
      '[domain]',
      'schema = "world.pkl"',
      '[fleet]',
      'name = "failover"',
      '[host]',
      `name = "${name}"`,
      '[nats]',
      `url = ${JSON.stringify(urls)}`,
      '[cluster]',
      'enabled = true',
      'replicas = 3',
      '[lifecycle]',
      'min_dwell_ms = 0',
      '[supervisor]',
      'pool_size = 0',
      '[log]',
      'level = "warn"',
    ].join('\n'),
  );
  return dir;
}

/** Polls `probe` every 50 ms until it holds; the time it took. */
async function until(probe: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    if (await probe().catch(() => false)) return performance.now() - t0;
    await sleep(50);
  }
  throw new Error(`${what} did not happen within ${ms} ms`);
}

/**
 * One round: a coordinating host runs an agent, another stands by; the first host is lost (its
 * supervisor and pm2 daemon killed). How long until the second answers for the fleet, and until the
 * agent answers there (a client reconciling it all along, as a game loop would).
 */
async function round1(urls: string): Promise<{ role: number; agent: number }> {
  const alpha = hostDir('alpha', urls);
  const beta = hostDir('beta', urls);
  let fleet: Fleet | undefined;
  try {
    await upFleet(loadConfig(join(alpha, 'thymos.toml')));
    await upFleet(loadConfig(join(beta, 'thymos.toml')));
    fleet = await connect(loadConfig(join(alpha, 'thymos.toml')));
    const f = fleet;
    await f.reconcile({ agents: { w_0: { relevance: 1 } } });
    const status = await f.status();
    const daemon = Number(readFileSync(join(alpha, 'data', 'pm2', 'pm2.pid'), 'utf8'));
    process.kill(status.supervisor.pid, 'SIGKILL');
    process.kill(daemon, 'SIGKILL');
    const t0 = performance.now();
    await until(async () => (await f.status()).supervisor.host === 'beta', 6 * LEASE_MS, 'beta answering');
    const role = performance.now() - t0;
    await until(
      async () => {
        const report = await f.reconcile({ agents: { w_0: { relevance: 1 } } });
        const row = (await f.status()).agents.find((a) => a.id === 'w_0');
        return report.failed.length === 0 && row?.state === 'active' && row.placement?.host === 'beta';
      },
      6 * LEASE_MS,
      'the agent answering on beta',
    );
    return { role, agent: performance.now() - t0 };
  } finally {
    await fleet?.close().catch(() => undefined);
    for (const dir of [beta, alpha]) {
      await killFleet(join(dir, 'data'));
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/**
 * A coordinating host lost on a three-node cluster with the default lease: how long until the host
 * standing by answers for the fleet, and until its agent answers there.
 */
export const failoverScenario: Scenario = {
  name: 'failover',
  title: 'A coordinating host lost: the host standing by takes the fleet over (three-node cluster, default lease)',
  async run() {
    const role: number[] = [];
    const agent: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const cluster = await startNatsCluster(3);
      try {
        const one = await round1(cluster.urls);
        role.push(one.role);
        agent.push(one.agent);
      } finally {
        await cluster.stop();
      }
    }
    const med = (xs: number[]) => quantile(xs, 0.5);
    const figures: Figure[] = [
      {
        metric: `host lost → the host standing by answers for the fleet, median of ${ROUNDS}`,
        value: round(med(role) / 1000, 2),
        unit: 's',
      },
      {
        metric: `host lost → its agent answers on the host standing by, median of ${ROUNDS}`,
        value: round(med(agent) / 1000, 2),
        unit: 's',
        goal: `≤ lease + 5 s = ${(LEASE_MS + 5000) / 1000} s`,
      },
      { metric: `the same, worst of ${ROUNDS}`, value: round(Math.max(...agent) / 1000, 2), unit: 's' },
    ];
    return {
      figures,
      notes: [
        `Two hosts of one fleet (each a supervisor with its own data directory and pm2) on three nats-server nodes with routes on 127.0.0.1, [cluster] enabled with the default lease (${LEASE_MS / 1000} s, renewed every 2 s, agents fenced 2 s before it ends) and replicas 3. The first host coordinates and runs one agent; the second stands by. The first host's supervisor and pm2 daemon are killed (SIGKILL) at once; its agent runs on alone until its fence. Timed from the kill: until the fleet's status is answered by the second host, and until a client reconciling the agent all along finds it active there. A new cluster each round.`,
      ],
    };
  },
};
