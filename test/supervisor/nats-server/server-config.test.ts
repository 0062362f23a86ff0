import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { fromSeed } from '@nats-io/nkeys';
import { connect } from '@nats-io/transport-node';

import { fleetPaths } from '../../../shared/config/fleet-paths.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { ensureNatsIdentity, nkeySigner, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import {
  earlierNatsServerConfig,
  moveJetStreamToFleetAccount,
  natsServerConfigFile,
  writeNatsServerConfig,
} from '../../../supervisor/nats-server/server-config.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';

/**
 * The managed server keeps the fleet's users and JetStream in an account of their own, beside
 * the system account whose advisories the supervisor reads. A store an earlier version kept in
 * the default account moves with the first start.
 */
describe('the managed nats-server’s accounts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'thymos-nats-accounts-'));
  const paths = fleetPaths(join(dir, 'data'));
  const users = { names: new FleetNames(), work: () => [] };
  const servers: TestNatsServer[] = [];
  after(async () => {
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('an earlier version’s store moves into the fleet’s account: its streams and what they hold are there after the first start', async () => {
    for (const who of ['supervisor', 'system'] as const) ensureNatsIdentity(paths.data, who);
    const port = await freePort();
    mkdirSync(paths.nats, { recursive: true });
    mkdirSync(paths.run, { recursive: true });
    // The earlier version's configuration: its users in the default account, no system account.
    const earlier = natsServerConfigFile(paths);
    const pub = (who: 'supervisor') => fromSeed(readNatsSeed(paths.data, who)!).getPublicKey();
    writeFileSync(
      earlier,
      [
        `listen: "127.0.0.1:${port}"`,
        `jetstream { store_dir: ${JSON.stringify(paths.nats)} }`,
        `authorization { users: [ { nkey: "${pub('supervisor')}" } ] }`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    assert.equal(earlierNatsServerConfig(paths), true);
    const old = await startNatsServer({ config: earlier });
    servers.push(old);
    const nc1 = await connect({ servers: old.url, authenticator: nkeySigner(readNatsSeed(paths.data, 'supervisor')!) });
    await (await jetstreamManager(nc1)).streams.add({ name: 'KEPT', subjects: ['kept.>'] });
    await jetstream(nc1).publish('kept.one', 'still here');
    await nc1.close();
    await old.stop();

    assert.equal(moveJetStreamToFleetAccount(paths), true);
    assert.equal(moveJetStreamToFleetAccount(paths), false, 'moved once');
    writeNatsServerConfig(paths, port, users);
    assert.equal(earlierNatsServerConfig(paths), false);
    const now = await startNatsServer({ config: natsServerConfigFile(paths) });
    servers.push(now);
    const nc2 = await connect({ servers: now.url, authenticator: nkeySigner(readNatsSeed(paths.data, 'supervisor')!) });
    const kept = await (await jetstreamManager(nc2)).streams.getMessage('KEPT', { last_by_subj: 'kept.one' });
    assert.equal(kept?.string(), 'still here');
    // The system identity reads the server's advisories; a connection with no identity is refused, and told of.
    const system = await connect({ servers: now.url, authenticator: nkeySigner(readNatsSeed(paths.data, 'system')!) });
    const told = system.subscribe('$SYS.SERVER.*.CLIENT.AUTH.ERR', { max: 1 });
    await system.flush();
    await assert.rejects(connect({ servers: now.url, name: 'nobody', maxReconnectAttempts: 0 }), /Authorization Violation/);
    for await (const m of told) assert.match(m.string(), /"name":"nobody"/);
    // It reads those advisories and nothing more: no requests of the system account's services.
    await assert.rejects(system.request('$SYS.REQ.SERVER.PING', '', { timeout: 5000 }), /Permissions Violation/i);
    await Promise.all([nc2.close(), system.close()]);
  });

  test('a store in both places is an error naming both, and nothing moves', () => {
    const other = fleetPaths(join(dir, 'both'));
    mkdirSync(join(other.nats, 'jetstream', '$G'), { recursive: true });
    mkdirSync(join(other.nats, 'jetstream', 'THYMOS'), { recursive: true });
    assert.throws(
      () => moveJetStreamToFleetAccount(other),
      (err: unknown) => isThymosError(err, 'NATS_UNAVAILABLE') && /both .*\$G.* and .*THYMOS/.test((err as Error).message),
    );
    assert.equal(existsSync(join(other.nats, 'jetstream', '$G')), true);
  });
});
