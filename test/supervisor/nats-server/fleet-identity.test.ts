import assert from 'node:assert/strict';
import { readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { createUser, fromSeed } from '@nats-io/nkeys';
import { connect as natsConnect, nkeyAuthenticator } from '@nats-io/transport-node';

import type { Fleet } from '../../../client/fleet-client.js';
import { fleetPaths } from '../../../shared/config/fleet-paths.js';
import { readFleetInfo } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { checkFleet } from '../../../shared/domain/fleet-checks.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { connectsAs } from '../../../shared/nats/nats-connection.js';
import { natsIdentityFile, natsSecretsDir, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { domainWork } from '../../../shared/nats/nats-permissions.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { NatsAccess } from '../../../supervisor/nats-server/nats-access.js';
import { ProcessManager } from '../../../supervisor/pm2/process-manager.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );
}

describe('who may connect to a fleet’s managed nats-server', () => {
  let testFleet: TestFleet | undefined;
  let fleet: Fleet;
  let data: string;
  let url: string;

  before(async () => {
    testFleet = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'pool_size = 1']);
    fleet = testFleet.fleet;
    const config = loadConfig(testFleet.ws.configPath);
    data = config.dataPath;
    url = readFleetInfo(config)!.nats_url;
  });

  after(async () => {
    await testFleet?.dispose();
  });

  test('the supervisor, the client, the approver, the pool and the server’s system account each have an identity of their own, in files only the owner reads', () => {
    assert.equal(statSync(natsSecretsDir(data)).mode & 0o777, 0o700);
    for (const who of ['supervisor', 'client', 'approver', 'spare', 'system'] as const) {
      assert.equal(statSync(natsIdentityFile(data, who)).mode & 0o777, 0o600, who);
      assert.match(readFileSync(natsIdentityFile(data, who), 'utf8'), /^SU[A-Z0-9]+\n$/, who);
    }
    const conf = readFileSync(join(fleetPaths(data).run, 'nats.conf'), 'utf8');
    assert.equal(statSync(join(fleetPaths(data).run, 'nats.conf')).mode & 0o777, 0o600);
    for (const who of ['supervisor', 'client', 'approver', 'spare', 'system'] as const) {
      const seed = new TextDecoder().decode(readNatsSeed(data, who)!);
      assert.equal(conf.includes(seed), false, `the server holds public keys only, not ${who}'s seed`);
      assert.equal(conf.includes(fromSeed(readNatsSeed(data, who)!).getPublicKey()), true, `${who} is admitted`);
    }
  });

  test('a connection with no identity, or one the fleet never made, is refused; the client’s own is admitted', async () => {
    await assert.rejects(
      natsConnect({ servers: url, name: 'thymos-agent-elder_rowan', maxReconnectAttempts: 0 }),
      /Authorization Violation/,
    );
    const forged = createUser();
    await assert.rejects(
      natsConnect({
        servers: url,
        name: 'thymos-agent-elder_rowan',
        authenticator: nkeyAuthenticator(forged.getSeed()),
        maxReconnectAttempts: 0,
      }),
      /Authorization Violation/,
    );
    assert.equal(await connectsAs(url, { seed: readNatsSeed(data, 'client')! }, 5000), true);
    // The supervisor hears of each refusal from the server's system account, and logs who tried.
    const log = join(fleetPaths(data).logs, 'supervisor.log');
    await eventually(
      () =>
        readFileSync(log, 'utf8').includes(
          `nats-server refused a connection named thymos-agent-elder_rowan from 127.0.0.1 signed by ${forged.getPublicKey()}`,
        )
          ? true
          : undefined,
      10_000,
      'the supervisor to log the forged connection',
    );
    assert.match(
      readFileSync(log, 'utf8'),
      /nats-server refused a connection named thymos-agent-elder_rowan from 127\.0\.0\.1 with no identity/,
    );
  });

  test('every agent of the domain has its identity once the fleet is up, and its seed is nowhere but in its file: not in its environment, arguments, logs, status or start context', async () => {
    const agents = (await fleet.status()).agents;
    assert.equal(agents.length, 6, 'the village has six agents');
    for (const a of agents) assert.notEqual(readNatsSeed(data, `agent-${a.id}`), undefined, a.id);
    const report = await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
    assert.deepEqual(report.started, ['elder_rowan']);
    const seed = new TextDecoder().decode(readNatsSeed(data, 'agent-elder_rowan')!);
    assert.equal(statSync(natsIdentityFile(data, 'agent-elder_rowan')).mode & 0o777, 0o600);
    const status = await fleet.status();
    const row = status.agents.find((a) => a.id === 'elder_rowan')!;
    assert.equal(row.state, 'active');
    const pid = row.pid!;
    const secrets = [
      seed,
      ...(['supervisor', 'client', 'approver', 'spare'] as const).map((w) => new TextDecoder().decode(readNatsSeed(data, w)!)),
    ];
    const places: Array<[string, string]> = [
      ['the agent’s environment (what pm2 env prints)', readFileSync(`/proc/${pid}/environ`, 'utf8')],
      ['the agent’s arguments', readFileSync(`/proc/${pid}/cmdline`, 'utf8')],
      ['the fleet status', JSON.stringify(status)],
      ...filesUnder(fleetPaths(data).logs).map((f): [string, string] => [f, readFileSync(f, 'utf8')]),
      ...filesUnder(fleetPaths(data).run).map((f): [string, string] => [f, readFileSync(f, 'utf8')]),
    ];
    for (const [where, text] of places) for (const s of secrets) assert.equal(text.includes(s), false, `a seed in ${where}`);
  });

  test('thymos up on a running fleet whose nats-server’s configuration is gone refuses, naming what to do', async () => {
    const conf = join(fleetPaths(data).run, 'nats.conf');
    renameSync(conf, `${conf}.aside`);
    try {
      await assert.rejects(
        upFleet(loadConfig(testFleet!.ws.configPath)),
        (err: Error & { code?: string }) =>
          err.code === 'NATS_UNAVAILABLE' &&
          /nats\.conf is gone, so it may admit anyone: run thymos down, then thymos up/.test(err.message),
      );
    } finally {
      renameSync(`${conf}.aside`, conf);
    }
  });

  test('granting an identity reloads the server and admits it; revoking one (an agent gone from the domain) refuses it from the reload on', async () => {
    const config = loadConfig(testFleet!.ws.configPath);
    const processes = await ProcessManager.connect(fleetPaths(data).pm2Home);
    try {
      const users = { names: new FleetNames(config.fleet.name), work: domainWork((await checkFleet(config)).domain) };
      const access = new NatsAccess({
        config,
        paths: fleetPaths(data),
        processes,
        natsUrl: url,
        logger: createLogger({ level: 'silent' }),
        users,
      });
      await access.grant('stranger');
      const seed = readNatsSeed(data, 'agent-stranger')!;
      assert.equal(await connectsAs(url, { seed }, 5000), true, 'admitted once granted');
      await access.grant('stranger');
      assert.deepEqual(readNatsSeed(data, 'agent-stranger'), seed, 'granting twice keeps the identity');
      const domain = (await fleet.status()).agents.map((a) => a.id);
      const synced = await access.sync(domain);
      assert.deepEqual(synced, { granted: [], revoked: ['stranger'] });
      assert.equal(readNatsSeed(data, 'agent-stranger'), undefined);
      await eventually(async () => ((await connectsAs(url, { seed }, 0)) ? undefined : true), 10_000, 'the revoked identity refused');
      assert.notEqual(readNatsSeed(data, 'agent-elder_rowan'), undefined, 'agents of the domain keep theirs');
    } finally {
      processes.disconnect();
    }
  });
});
