import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';

import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isAlive } from '../../../shared/platform/data-lock.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { ClusterOwnership } from '../../../supervisor/ownership/cluster-ownership.js';
import { ProcessManager } from '../../../supervisor/pm2/process-manager.js';
import { asFleetSupervisor, eventually, fleetPids, runThymos, startTestFleet, type TestFleet } from '../../helpers/fleet.js';

const LEASE_MS = 3000;

/**
 * A fleet with placement by lease (`[cluster] enabled`) on one host, against another host that
 * waits to take its agents: a supervisor paused past its lease (SIGSTOP) cannot stop its agents, so
 * they stop themselves before the other host may claim them; resumed, its late renewal fails, and it
 * says so in status and the audit log.
 */
describe('a fleet under a lease, its supervisor paused', () => {
  let tf: TestFleet;
  let nc: NatsConnection;
  let other: ClusterOwnership;
  let supervisorPid = 0;
  let stopOther = () => undefined as void;
  const data = () => join(tf.ws.dir, 'data');

  before(async () => {
    tf = await startTestFleet([
      '[cluster]',
      'enabled = true',
      `lease_ms = ${LEASE_MS}`,
      'renew_ms = 400',
      'fence_margin_ms = 1000',
      '[lifecycle]',
      'min_dwell_ms = 0',
      '[supervisor]',
      'pool_size = 0',
    ]);
    const config = loadConfig(tf.ws.configPath);
    nc = await natsConnect({
      servers: JSON.parse(readFileSync(join(data(), 'run', 'fleet.json'), 'utf8')).nats_url,
      ...asFleetSupervisor(data()),
    });
    other = await ClusterOwnership.open({
      nc,
      names: new FleetNames(config.fleet.name),
      host: 'other_host',
      leaseMs: LEASE_MS,
      replicas: 1,
      dataDir: join(tf.ws.dir, 'elsewhere'),
    });
    // A live host: it renews as its supervisor would.
    stopOther = other.renewEvery(400, { failed: () => undefined });
    supervisorPid = fleetPids(data()).apps.get('thymos-supervisor')!;
  });
  after(async () => {
    if (supervisorPid > 0 && isAlive(supervisorPid)) process.kill(supervisorPid, 'SIGCONT');
    stopOther();
    await other?.close();
    await nc?.close();
    await tf?.dispose();
  });

  test('its agents run under the lease as long as it is renewed; another host cannot claim them', async () => {
    const report = await tf.fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
    const status = await tf.fleet.status();
    assert.equal(status.supervisor.lease?.state, 'held');
    const host = status.supervisor.host;
    const row = status.agents.find((a) => a.id === 'elder_rowan')!;
    assert.equal(row.placement?.host, host, 'status names the host that holds it');
    assert.ok((row.placement?.token ?? 0) > 0);
    assert.deepEqual(status.supervisor.lease!.hosts.map((h) => h.host).sort(), [host, 'other_host'].sort(), 'and every host of the bucket');
    const printed = await runThymos(['status'], tf.ws.dir);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /^ID +STATE .* HOST +NOTE$/m);
    assert.match(printed.stdout, new RegExp(`^elder_rowan +active .* ${host} #${row.placement!.token}`, 'm'));
    assert.match(printed.stdout, /^lease held \(3000 ms\)$/m);
    assert.match(printed.stdout, /^ {2}other_host: pid \d+, renewed [\d.]+s ago, live$/m);
    const metrics = await (await fetch(status.supervisor.metrics_url)).text();
    assert.match(metrics, new RegExp(`^thymos_lease_renew_seconds_count\\{host="${host}"\\} [1-9]`, 'm'), 'renewals timed, per host');
    const pid = row.pid!;
    // Three leases long, renewed and extended all along.
    const until = Date.now() + 3 * LEASE_MS;
    await eventually(() => (Date.now() > until ? true : undefined), 4 * LEASE_MS, 'three leases to pass');
    assert.ok(isAlive(pid), 'the agent still runs');
    await assert.rejects(other.claim('elder_rowan'), /held by host .*, whose lease is live/);
  });

  test('paused past its lease, its agents stop themselves before another host may claim them, and pm2 does not restart them; resumed, its late renewal fails and says so', async () => {
    const agentPid = (await tf.fleet.status()).agents.find((a) => a.id === 'elder_rowan')!.pid!;
    process.kill(supervisorPid, 'SIGSTOP');
    const token = await eventually(() => other.claim('elder_rowan').catch(() => undefined), 6 * LEASE_MS, 'the other host to claim it');
    assert.ok(token > 0);
    assert.equal(isAlive(agentPid), false, 'the agent had stopped itself before the other host could claim it');
    const pm = await ProcessManager.connect(join(data(), 'pm2'));
    try {
      const app = await pm.describe('thymos-agent-elder_rowan');
      assert.notEqual(app?.status, 'online', 'pm2 did not start it again');
    } finally {
      pm.disconnect();
    }
    assert.match(readFileSync(join(data(), 'logs', 'elder_rowan.log'), 'utf8'), /lease ended: the agent stops itself/);
    // Resumed: the renewal it sends is late and fails; it records the agent Dormant, audits the loss and shows it.
    process.kill(supervisorPid, 'SIGCONT');
    const status = await eventually(
      async () => {
        const s = await tf.fleet.status();
        return s.supervisor.lease?.lost && s.agents.find((a) => a.id === 'elder_rowan')?.state === 'dormant' ? s : undefined;
      },
      20_000,
      'the supervisor to find its lease lost and record its agent Dormant',
    );
    assert.match(
      status.supervisor.lease!.lost!.reason,
      /renewed after its lease had ended|renewed after its agents' fence had passed|found its lease ended by another host/,
    );
    const row = status.agents.find((a) => a.id === 'elder_rowan')!;
    assert.equal(row.state, 'dormant');
    assert.equal(row.last_error?.code, 'LEASE_ENDED');
    const audit = readFileSync(join(data(), 'logs', 'audit.jsonl'), 'utf8');
    assert.match(audit, /"op":"lease_lost".*"elder_rowan"/);
    const metrics = await (await fetch(status.supervisor.metrics_url)).text();
    assert.match(metrics, /^thymos_lease_losses_total\{host="[^"]+"\} 1$/m);
    // The other host lets it go; the next reconcile claims it again and wakes it, under a greater token.
    await other.release('elder_rowan');
    const again = await tf.fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(again.failed, []);
    assert.equal((await tf.fleet.status()).agents.find((a) => a.id === 'elder_rowan')?.state, 'active');
  });
});
