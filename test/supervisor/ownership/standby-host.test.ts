import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { SupervisorRequester } from '../../../shared/nats/supervisor-requester.js';
import { isAlive } from '../../../shared/platform/data-lock.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { downFleet, upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { disposeOwnServerFleet, eventually } from '../../helpers/fleet.js';
import { startNatsCluster, type TestNatsCluster } from '../../helpers/nats-cluster.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

const LEASE_MS = 3000;

function host(name: string, urls: string): Workspace {
  return createWorkspace({
    natsUrl: urls,
    extra: [
      '[fleet]',
      'name = "standby"',
      '[host]',
      `name = "${name}"`,
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
}

/** Every live pid of elder_rowan among the hosts' agents: a scan of both hosts. */
async function copiesOfElder(fleet: Fleet, pids: number[]): Promise<number[]> {
  const row = (await fleet.status()).agents.find((a) => a.id === 'elder_rowan');
  return [...new Set([...pids, ...(row?.pid ? [row.pid] : [])])].filter((pid) => isAlive(pid));
}

/**
 * Two hosts of one fleet on a three-node cluster: the second's supervisor, started while the first
 * coordinates the fleet, stands by; when the first host is lost (its supervisor and pm2 daemon killed,
 * its agents left to their fence), the second takes the coordinator role and the agents over, and
 * no agent ever runs on both.
 */
describe('a second host stands by and takes the fleet over', () => {
  let cluster: TestNatsCluster;
  let alpha: Workspace;
  let beta: Workspace;
  let fleet: Fleet | undefined;

  before(async () => {
    cluster = await startNatsCluster(3);
    alpha = host('alpha', cluster.urls);
    beta = host('beta', cluster.urls);
  });
  after(async () => {
    await fleet?.close().catch(() => undefined);
    await disposeOwnServerFleet(beta, undefined, undefined);
    await disposeOwnServerFleet(alpha, undefined, undefined);
    await cluster?.stop();
  });

  test('started while another host coordinates, a supervisor stands by: it answers nothing and claims nothing', async () => {
    const steps: string[] = [];
    await upFleet(loadConfig(alpha.configPath));
    fleet = await connect(loadConfig(alpha.configPath));
    const report = await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
    await upFleet(loadConfig(beta.configPath), { onStep: (s) => steps.push(s) });
    assert.ok(
      steps.some((s) => /supervisor standing by \(pid \d+\): host alpha coordinates the fleet/.test(s)),
      steps.join('\n'),
    );
    const status = await fleet.status();
    assert.equal(status.supervisor.host, 'alpha');
    assert.equal(status.supervisor.lease?.coordinator?.host, 'alpha');
    assert.ok(status.supervisor.lease?.hosts.some((h) => h.host === 'beta'));
    assert.equal(status.agents.find((a) => a.id === 'elder_rowan')?.placement?.host, 'alpha');
    assert.match(readFileSync(join(beta.dir, 'data', 'logs', 'supervisor.log'), 'utf8'), /standing by: another host coordinates/);
  });

  test('the coordinating host lost, the one standing by takes the role and the agents over after its lease, never both running one', async () => {
    const before = await fleet!.status();
    const elder = before.agents.find((a) => a.id === 'elder_rowan')!.pid!;
    const daemon = Number(readFileSync(join(alpha.dir, 'data', 'pm2', 'pm2.pid'), 'utf8'));
    // The host is lost: its supervisor and its pm2 daemon die at once; its agent runs on alone.
    process.kill(before.supervisor.pid, 'SIGKILL');
    process.kill(daemon, 'SIGKILL');
    const seen = [elder];
    await eventually(
      async () => {
        const status = await fleet!.status().catch(() => undefined);
        if (status?.supervisor.host !== 'beta') return undefined;
        // From the moment beta answers, alpha's copy has stopped itself.
        assert.equal(isAlive(elder), false, 'alpha’s agent stopped at its fence before beta took over');
        return status;
      },
      20 * LEASE_MS,
      'beta to answer for the fleet',
    );
    await eventually(
      async () => {
        const report = await fleet!.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
        const row = (await fleet!.status()).agents.find((a) => a.id === 'elder_rowan');
        if (row?.pid) seen.push(row.pid);
        assert.ok((await copiesOfElder(fleet!, seen)).length <= 1, 'never two copies');
        return row?.state === 'active' && report.failed.length === 0 ? row : undefined;
      },
      10 * LEASE_MS,
      'beta to run elder_rowan',
    );
    const status = await fleet!.status();
    assert.equal(status.supervisor.lease?.coordinator?.host, 'beta');
    assert.equal(status.agents.find((a) => a.id === 'elder_rowan')?.placement?.host, 'beta');
    assert.deepEqual(await copiesOfElder(fleet!, seen), [status.agents.find((a) => a.id === 'elder_rowan')!.pid]);
  });

  test('a coordinator paused past its lease loses the role to the host standing by; resumed, it gives its placements up and stands by', async () => {
    // Alpha comes back: it stands by behind beta now.
    await downFleet(loadConfig(alpha.configPath)).catch(() => undefined);
    await upFleet(loadConfig(alpha.configPath));
    const before = await fleet!.status();
    const paused = before.supervisor.pid;
    assert.equal(before.supervisor.host, 'beta');
    process.kill(paused, 'SIGSTOP');
    try {
      await eventually(
        async () => ((await fleet!.status().catch(() => undefined))?.supervisor.host === 'alpha' ? true : undefined),
        20 * LEASE_MS,
        'alpha to take the coordinator role',
      );
    } finally {
      process.kill(paused, 'SIGCONT');
    }
    // Resumed, beta finds its lease lost and the role taken: its supervisor stops, and pm2 starts it again standing by.
    await eventually(
      async () => {
        const status = await fleet!.status();
        const beta = status.supervisor.lease?.hosts.find((h) => h.host === 'beta');
        return status.supervisor.host === 'alpha' && beta && beta.pid !== paused && !beta.expired_by ? status : undefined;
      },
      20 * LEASE_MS,
      'beta to stand by under a new supervisor',
    );
    assert.equal(isAlive(paused), false);
    // Its placements given up, alpha runs elder_rowan, once.
    await eventually(
      async () => {
        await fleet!.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
        const row = (await fleet!.status()).agents.find((a) => a.id === 'elder_rowan');
        return row?.state === 'active' && row.placement?.host === 'alpha' ? row : undefined;
      },
      10 * LEASE_MS,
      'alpha to run elder_rowan',
    );
    assert.match(readFileSync(join(beta.dir, 'data', 'logs', 'supervisor.log'), 'utf8'), /the coordinator role is lost/);
  });

  test('thymos down on a host standing by leaves the coordinator’s agents running', async () => {
    const pid = (await fleet!.status()).agents.find((a) => a.id === 'elder_rowan')!.pid!;
    const steps: string[] = [];
    await downFleet(loadConfig(beta.configPath), { onStep: (s) => steps.push(s) });
    assert.ok(
      steps.some((s) => /host alpha coordinates the fleet: its agents keep running/.test(s)),
      steps.join('\n'),
    );
    assert.equal(isAlive(pid), true);
    assert.equal((await fleet!.status()).agents.find((a) => a.id === 'elder_rowan')?.state, 'active');
    // A stop of every agent asked of beta's supervisor is refused by alpha's, which answers.
    const nc = await natsConnect({ servers: cluster.urls });
    try {
      await assert.rejects(
        SupervisorRequester.control(nc, 10_000, new FleetNames('standby')).request('stop_all', { host: 'beta' }),
        (err: unknown) => isThymosError(err, 'NOT_OWNER') && /asked of host beta's supervisor; host alpha answered/.test(err.message),
      );
    } finally {
      await nc.close();
    }
    assert.equal(isAlive(pid), true);
  });
});
