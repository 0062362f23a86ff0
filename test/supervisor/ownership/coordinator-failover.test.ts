import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { isAlive } from '../../../shared/platform/data-lock.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { disposeOwnServerFleet, eventually } from '../../helpers/fleet.js';
import { startNatsCluster, type TestNatsCluster } from '../../helpers/nats-cluster.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

// Longer than the other cluster tests': four agents start at once on a busy machine, each within its fence (lease less margin) of its start.
const LEASE_MS = 8000;
const WOKEN = ['elder_rowan', 'bram_smith', 'mira_herbalist', 'tomas_innkeeper'];

function host(name: string, urls: string): Workspace {
  return createWorkspace({
    natsUrl: urls,
    extra: [
      '[fleet]',
      'name = "failover"',
      '[host]',
      `name = "${name}"`,
      '[cluster]',
      'enabled = true',
      `lease_ms = ${LEASE_MS}`,
      'renew_ms = 1000',
      'fence_margin_ms = 1500',
      'replicas = 3',
      '[lifecycle]',
      'min_dwell_ms = 0',
      'max_active = 10',
      '[supervisor]',
      'pool_size = 0',
    ].join('\n'),
  });
}

/**
 * The coordinator's host lost in the middle of a reconcile (its supervisor and pm2 daemon killed):
 * the host standing by takes the role over once the lease ends, reads the reconcile's journal from
 * the placement bucket and finishes it, with no agent ever running on both hosts.
 */
describe('a coordinator lost in the middle of a reconcile', () => {
  let cluster: TestNatsCluster;
  let alpha: Workspace;
  let beta: Workspace;
  let fleet: Fleet | undefined;
  let nc: NatsConnection | undefined;

  before(async () => {
    cluster = await startNatsCluster(3);
    alpha = host('alpha', cluster.urls);
    beta = host('beta', cluster.urls);
    await upFleet(loadConfig(alpha.configPath));
    await upFleet(loadConfig(beta.configPath));
    fleet = await connect(loadConfig(alpha.configPath));
    nc = await natsConnect({ servers: cluster.urls });
  });
  after(async () => {
    await nc?.close();
    await fleet?.close().catch(() => undefined);
    await disposeOwnServerFleet(beta, undefined, undefined);
    await disposeOwnServerFleet(alpha, undefined, undefined);
    await cluster?.stop();
  });

  test('the host standing by finishes it from the journal; the caller hears the coordinator was lost', async () => {
    const coordinator = (await fleet!.status()).supervisor;
    assert.equal(coordinator.host, 'alpha');
    const kv = await new Kvm(jetstream(nc!)).open('FAILOVER_PLACEMENT');
    const journaled = (async () => {
      for await (const e of await kv.watch({ key: 'journal' }))
        if (e.operation === 'PUT') return JSON.parse(e.string()) as { host: string };
      return undefined;
    })();
    const context = { agents: Object.fromEntries(WOKEN.map((id) => [id, { relevance: 1 }])) };
    const asked = fleet!.reconcile(context).then(
      (report) => ({ report }),
      (err: unknown) => ({ err }),
    );
    assert.equal((await journaled)?.host, 'alpha');
    // The host is lost while the reconcile moves agents: its supervisor and pm2 daemon die; its agents run on alone to their fence.
    const daemon = Number(readFileSync(join(alpha.dir, 'data', 'pm2', 'pm2.pid'), 'utf8'));
    process.kill(coordinator.pid, 'SIGKILL');
    process.kill(daemon, 'SIGKILL');
    const outcome = await asked;
    assert.ok('err' in outcome, 'the caller of the lost reconcile is told');
    assert.ok(isThymosError(outcome.err, 'SUPERVISOR_LOST') || isThymosError(outcome.err, 'TIMEOUT'), String(outcome.err));
    const alphaPids = new Set<number>();
    // Beta finishes the reconcile by itself: nobody asks again.
    const status = await eventually(
      async () => {
        const s = await fleet!.status().catch(() => undefined);
        if (s?.supervisor.host !== 'beta') return undefined;
        const rows = s.agents.filter((a) => WOKEN.includes(a.id));
        return rows.length === WOKEN.length && rows.every((a) => a.state === 'active' && a.placement?.host === 'beta') ? s : undefined;
      },
      6 * LEASE_MS,
      'beta to finish the reconcile alpha was killed in',
    );
    for (const line of readFileSync(join(alpha.dir, 'data', 'logs', 'supervisor.log'), 'utf8').split('\n'))
      if (/"msg":"agent started"/.test(line)) alphaPids.add((JSON.parse(line) as { pid: number }).pid);
    for (const pid of alphaPids) assert.equal(isAlive(pid), false, `alpha's agent ${pid} stopped at its fence`);
    // The last agent is recorded Active before the reconcile ends: its end (the log line, the journal's deletion) is waited for.
    await eventually(
      () =>
        /interrupted reconcile finished/.test(readFileSync(join(beta.dir, 'data', 'logs', 'supervisor.log'), 'utf8')) ? true : undefined,
      2 * LEASE_MS,
      'beta to log the interrupted reconcile finished',
    );
    await eventually(
      async () => ((await kv.get('journal'))?.operation === 'PUT' ? undefined : true),
      2 * LEASE_MS,
      'the journal to end with the reconcile',
    );
    assert.equal(status.supervisor.lease?.coordinator?.host, 'beta');
  });
});
