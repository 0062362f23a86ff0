import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connect } from '../client/fleet-client.js';
import { loadConfig } from '../shared/config/thymos-config.js';
import { downFleet, upFleet } from '../supervisor/launch/fleet-launcher.js';
import { killFleet } from '../test/helpers/fleet.js';
import { startNatsCluster } from '../test/helpers/nats-cluster.js';
import { startNatsServer } from '../test/helpers/nats-server.js';
import { domainText } from './domain-text.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const AGENTS = 50;
const ROUNDS = 3;

/** A Pkl domain of n plain agents. */
function domainPkl(n: number): string {
  return domainText(n, (i) => ({ id: `w_${String(i).padStart(3, '0')}`, name: `Worker ${i}` }));
}

/** The same fleet of AGENTS agents on `url`, woken and put to sleep ROUNDS times: the wall time of each reconcile. */
async function rounds(url: string, cluster: boolean): Promise<{ up: number[]; down: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'thymos-bench-cluster-'));
  writeFileSync(join(dir, 'world.pkl'), domainPkl(AGENTS));
  writeFileSync(
    join(dir, 'thymos.toml'),
    [
      'data_dir = "data"',
      '[domain]',
      'schema = "world.pkl"',
      '[nats]',
      `url = ${JSON.stringify(url)}`,
      ...(cluster ? ['[cluster]', 'enabled = true', 'replicas = 3'] : []),
      '[lifecycle]',
      'min_dwell_ms = 0',
      `max_running = ${AGENTS}`,
      `max_active = ${AGENTS}`,
      '[supervisor]',
      'pool_size = 0',
      '[log]',
      'level = "warn"',
    ].join('\n'),
  );
  const config = loadConfig(join(dir, 'thymos.toml'));
  const ids = Array.from({ length: AGENTS }, (_, i) => `w_${String(i).padStart(3, '0')}`);
  const force = (relevance: number) => ({ agents: Object.fromEntries(ids.map((id) => [id, { relevance }])) });
  const up: number[] = [];
  const down: number[] = [];
  try {
    await upFleet(config);
    const fleet = await connect(config);
    try {
      for (let r = 0; r < ROUNDS; r++) {
        let t = performance.now();
        const woke = await fleet.reconcile(force(1));
        up.push(performance.now() - t);
        if (woke.started.length !== AGENTS || woke.failed.length) throw new Error(`wake: ${JSON.stringify(woke.failed)}`);
        t = performance.now();
        const slept = await fleet.reconcile(force(0.2));
        down.push(performance.now() - t);
        if (slept.stopped.length !== AGENTS || slept.failed.length) throw new Error(`sleep: ${JSON.stringify(slept.failed)}`);
      }
    } finally {
      await fleet.close();
    }
  } finally {
    await downFleet(config).catch(() => undefined);
    await killFleet(join(dir, 'data'));
    rmSync(dir, { recursive: true, force: true });
  }
  return { up, down };
}

/**
 * The same 50 agents reconciled on one host against today's single nats-server, and against a
 * three-node cluster with placement by lease and every stream and the placement bucket on three
 * replicas: what the cluster costs a reconcile.
 */
export const clusterReconcileScenario: Scenario = {
  name: 'cluster-reconcile',
  title: 'Placement by lease: 50 agents reconciled on a three-node cluster (replicas 3) against one nats-server',
  async run() {
    const single = await startNatsServer({ jetstream: true });
    let one: { up: number[]; down: number[] };
    try {
      one = await rounds(single.url, false);
    } finally {
      await single.stop();
    }
    const cluster = await startNatsCluster(3);
    let three: { up: number[]; down: number[] };
    try {
      three = await rounds(cluster.urls, true);
    } finally {
      await cluster.stop();
    }
    const med = (xs: number[]) => quantile(xs, 0.5);
    const figures: Figure[] = [
      { metric: `${AGENTS} agents Dormant → Active, one nats-server, median of ${ROUNDS}`, value: round(med(one.up) / 1000, 2), unit: 's' },
      {
        metric: `${AGENTS} agents Dormant → Active, three-node cluster with leases and replicas 3, median of ${ROUNDS}`,
        value: round(med(three.up) / 1000, 2),
        unit: 's',
      },
      { metric: 'wake: cluster ÷ one server', value: round(med(three.up) / med(one.up), 2), unit: '×', goal: '≤ 1.2×' },
      {
        metric: `${AGENTS} agents Active → Dormant, one nats-server, median of ${ROUNDS}`,
        value: round(med(one.down) / 1000, 2),
        unit: 's',
      },
      {
        metric: `${AGENTS} agents Active → Dormant, three-node cluster, median of ${ROUNDS}`,
        value: round(med(three.down) / 1000, 2),
        unit: 's',
      },
      { metric: 'sleep: cluster ÷ one server', value: round(med(three.down) / med(one.down), 2), unit: '×', goal: '≤ 1.2×' },
    ];
    return {
      figures,
      notes: [
        `One host, the same domain of ${AGENTS} plain agents, no warm pool; each reconcile forces all ${AGENTS} up (relevance 1), then all down. First against one nats-server the bench runs ([nats] url, no leases); then against three nodes with routes on 127.0.0.1 ([cluster] enabled, replicas = 3: every stream and the placement bucket on three nodes, each agent claimed, fenced and extended). The three nodes share the machine's two cores with the fleet.`,
      ],
    };
  },
};
