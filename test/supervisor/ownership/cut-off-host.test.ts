import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isAlive } from '../../../shared/platform/data-lock.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { ClusterOwnership } from '../../../supervisor/ownership/cluster-ownership.js';
import { disposeOwnServerFleet, eventually } from '../../helpers/fleet.js';
import { startNatsCluster, type TestNatsCluster } from '../../helpers/nats-cluster.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

const LEASE_MS = 3000;

/**
 * A host cut off from the rest of a three-node cluster: its supervisor and agents connect to its own
 * node only, and that node's routes are cut. Its agents stop within the lease, before a host on the
 * rest of the cluster may claim them.
 */
describe('a host cut off from the cluster', () => {
  let cluster: TestNatsCluster;
  let ws: Workspace;
  let fleet: Fleet | undefined;
  let nc: NatsConnection;
  let judge: ClusterOwnership | undefined;
  let stopJudge = () => undefined as void;

  before(async () => {
    cluster = await startNatsCluster(3);
    ws = createWorkspace({
      natsUrl: cluster.nodes[0]!.url,
      extra: [
        '[fleet]',
        'name = "cut"',
        '[host]',
        'name = "island"',
        '[cluster]',
        'enabled = true',
        `lease_ms = ${LEASE_MS}`,
        'renew_ms = 400',
        'fence_margin_ms = 1000',
        'replicas = 3',
        '[lifecycle]',
        'min_dwell_ms = 0',
        '[supervisor]',
        'pool_size = 0',
      ].join('\n'),
    });
    const config = loadConfig(ws.configPath);
    await upFleet(config);
    fleet = await connect(config);
    // A host on the rest of the cluster, through another node.
    nc = await natsConnect({ servers: [cluster.nodes[1]!.url, cluster.nodes[2]!.url] });
    judge = await ClusterOwnership.open({
      nc,
      names: new FleetNames('cut'),
      host: 'mainland',
      leaseMs: LEASE_MS,
      replicas: 3,
      dataDir: join(ws.dir, 'mainland'),
    });
    stopJudge = judge.renewEvery(400, { failed: () => undefined });
  });
  after(async () => {
    stopJudge();
    await judge?.close();
    await nc?.close();
    await cluster?.nodes[0]?.rejoin().catch(() => undefined);
    await disposeOwnServerFleet(ws, fleet, undefined);
    await cluster?.stop();
  });

  test('its node’s routes cut, its agent stops itself before the rest of the cluster may claim it', async () => {
    const report = await fleet!.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
    const pid = (await fleet!.status()).agents.find((a) => a.id === 'elder_rowan')!.pid!;
    await assert.rejects(judge!.claim('elder_rowan'), /held by host island, whose lease is live/);
    await cluster.nodes[0]!.isolate();
    const token = await eventually(() => judge!.claim('elder_rowan').catch(() => undefined), 10 * LEASE_MS, 'the mainland to claim it');
    assert.ok(token > 0);
    assert.equal(isAlive(pid), false, 'the agent on the island had stopped itself before the mainland could claim it');
    assert.match(readFileSync(join(ws.dir, 'data', 'logs', 'elder_rowan.log'), 'utf8'), /lease ended: the agent stops itself/);
  });
});
