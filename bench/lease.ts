import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { connect } from '@nats-io/transport-node';

import { FleetNames } from '../shared/protocol/fleet-names.js';
import { ClusterOwnership } from '../supervisor/ownership/cluster-ownership.js';
import { startNatsCluster, type TestNatsCluster } from '../test/helpers/nats-cluster.js';
import { tempDir } from '../test/helpers/temp-dir.js';
import { REPO_ROOT } from '../test/helpers/workspace.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const CLAIMS = 300;
const RENEWALS = 300;
/** How long the idle host is watched for the renewal's CPU. */
const IDLE_MS = 30_000;

/**
 * A host's idle CPU with placement by lease, in a process of its own: the lease renewed every
 * `renewMs` (the default 2000 ms) and nothing else, against the same process connected and idle with
 * no lease. Prints the CPU ms it spent over `IDLE_MS`.
 */
function idleCpu(urls: string, lease: boolean): Promise<number> {
  const dir = tempDir('thymos-bench-lease-');
  const script = join(dir, 'idle.mts');
  const mod = (p: string) => JSON.stringify(pathToFileURL(join(REPO_ROOT, p)).href);
  writeFileSync(
    script,
    `import { connect } from ${mod('node_modules/@nats-io/transport-node/lib/mod.js')};
import { ClusterOwnership } from ${mod('supervisor/ownership/cluster-ownership.ts')};
import { FleetNames } from ${mod('shared/protocol/fleet-names.ts')};
const nc = await connect({ servers: ${JSON.stringify(urls.split(','))} });
let stop = () => undefined;
if (${lease}) {
  const o = await ClusterOwnership.open({ nc, names: new FleetNames('benchidle'), host: 'idle', leaseMs: 10000, replicas: 3, dataDir: ${JSON.stringify(dir)} });
  for (let i = 0; i < 50; i++) await o.claim('npc_' + i);
  stop = o.renewEvery(2000, { failed: () => undefined });
}
await new Promise((r) => setTimeout(r, 1000));
const t0 = process.cpuUsage();
await new Promise((r) => setTimeout(r, ${IDLE_MS}));
const d = process.cpuUsage(t0);
stop();
process.stdout.write(String((d.user + d.system) / 1000));
await nc.close();
process.exit(0);
`,
  );
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`idle host exited ${code}: ${err}`))));
  });
}

/**
 * Placement by lease on a three-node nats-server cluster (Debian's 2.9.10, routes on 127.0.0.1,
 * the placement bucket on three replicas): how long a claim and a renewal take to be stored, and
 * what keeping a lease costs an idle host.
 */
export const leaseScenario: Scenario = {
  name: 'lease',
  title: 'Placement by lease: claim and renewal on a three-node cluster, and an idle host’s CPU',
  async run() {
    let cluster: TestNatsCluster | undefined;
    try {
      cluster = await startNatsCluster(3);
      const urls = cluster.urls.split(',');
      const nc = await connect({ servers: urls });
      const names = new FleetNames('bench');
      const host = await ClusterOwnership.open({
        nc,
        names,
        host: 'bench',
        leaseMs: 10_000,
        replicas: 3,
        dataDir: tempDir('thymos-bench-'),
      });
      // Warm: the bucket's leader elected and the connection's subscriptions made.
      for (let i = 0; i < 20; i++) await host.claim(`warm_${i}`);
      const claims: number[] = [];
      for (let i = 0; i < CLAIMS; i++) {
        const t = performance.now();
        await host.claim(`npc_${i}`);
        claims.push(performance.now() - t);
      }
      const renewals: number[] = [];
      for (let i = 0; i < RENEWALS; i++) {
        const t = performance.now();
        await host.renew();
        renewals.push(performance.now() - t);
      }
      // A claim of an agent another live host holds: read, judged on the server's clock, refused.
      const other = await ClusterOwnership.open({
        nc,
        names,
        host: 'other',
        leaseMs: 10_000,
        replicas: 3,
        dataDir: tempDir('thymos-bench-'),
      });
      const refusals: number[] = [];
      for (let i = 0; i < 100; i++) {
        const t = performance.now();
        await other.claim(`npc_${i}`).catch(() => undefined);
        refusals.push(performance.now() - t);
      }
      await other.close();
      await host.close();
      await nc.close();
      const withLease = await idleCpu(cluster.urls, true);
      const without = await idleCpu(cluster.urls, false);
      const share = ((withLease - without) / IDLE_MS) * 100;
      const figures: Figure[] = [
        { metric: 'claim of a free agent p50', value: round(quantile(claims, 0.5), 2), unit: 'ms' },
        { metric: 'claim of a free agent p95', value: round(quantile(claims, 0.95), 2), unit: 'ms', goal: '≤ 10 ms p95' },
        { metric: 'renewal p50', value: round(quantile(renewals, 0.5), 2), unit: 'ms' },
        { metric: 'renewal p95', value: round(quantile(renewals, 0.95), 2), unit: 'ms', goal: '≤ 10 ms p95' },
        { metric: 'claim refused (another live host holds it) p95', value: round(quantile(refusals, 0.95), 2), unit: 'ms' },
        {
          metric: 'idle host CPU for its lease (50 agents, renew every 2 s)',
          value: round(share, 3),
          unit: '% of a core',
          goal: '≤ 0.5 %',
        },
      ];
      return {
        figures,
        notes: [
          `${CLAIMS} claims of agents no host held, then ${RENEWALS} renewals back to back, one at a time, through one connection to a three-node cluster (routes on 127.0.0.1; the bucket on 3 replicas, reads from its leader). A claim is a read and a compare-and-set; a renewal is one compare-and-set.`,
          'A refused claim reads the placement and the holder’s lease, and writes a clock key to have the server’s time: four requests.',
          `Idle CPU: a process holding the lease of 50 agents, renewing every 2 s, against the same process connected with no lease, each watched ${IDLE_MS / 1000} s (process.cpuUsage); the difference as a share of one core. Extending the agents’ fences adds one publish per running agent per renewal, not counted here.`,
        ],
      };
    } finally {
      await cluster?.stop();
    }
  },
};
