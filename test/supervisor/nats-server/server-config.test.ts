import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

import { fleetPaths } from '../../../shared/config/fleet-paths.js';
import { ensureNatsIdentity, nkeySigner, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { natsServerConfigFile, writeNatsServerConfig } from '../../../supervisor/nats-server/server-config.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';

/**
 * The managed server keeps the fleet's users and JetStream in an account of their own, beside
 * the system account whose advisories the supervisor reads.
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

  test('the fleet’s JetStream is in its own account, and the system identity reads the advisories of refused connections, nothing more', async () => {
    for (const who of ['supervisor', 'system'] as const) ensureNatsIdentity(paths.data, who);
    mkdirSync(paths.nats, { recursive: true });
    writeNatsServerConfig(paths, await freePort(), users);
    const server = await startNatsServer({ config: natsServerConfigFile(paths) });
    servers.push(server);
    const nc = await connect({ servers: server.url, authenticator: nkeySigner(readNatsSeed(paths.data, 'supervisor')!) });
    await (await jetstreamManager(nc)).streams.add({ name: 'KEPT', subjects: ['kept.>'] });
    await jetstream(nc).publish('kept.one', 'kept');
    assert.equal(existsSync(join(paths.nats, 'jetstream', 'THYMOS', 'streams', 'KEPT')), true, 'the store is the fleet account’s');
    // The system identity reads the server's advisories; a connection with no identity is refused, and told of.
    const system = await connect({ servers: server.url, authenticator: nkeySigner(readNatsSeed(paths.data, 'system')!) });
    const told = system.subscribe('$SYS.SERVER.*.CLIENT.AUTH.ERR', { max: 1 });
    await system.flush();
    await assert.rejects(connect({ servers: server.url, name: 'nobody', maxReconnectAttempts: 0 }), /Authorization Violation/);
    for await (const m of told) assert.match(m.string(), /"name":"nobody"/);
    // It reads those advisories and nothing more: no requests of the system account's services.
    await assert.rejects(system.request('$SYS.REQ.SERVER.PING', '', { timeout: 5000 }), /Permissions Violation/i);
    await Promise.all([nc.close(), system.close()]);
  });
});
