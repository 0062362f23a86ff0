import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { admission } from '../../../shared/nats/nats-connection.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { disposeOwnServerFleet, eventually, fleetPids, killFleet } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { makeTestCerts, type TestCerts } from '../../helpers/tls-certs.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

/**
 * A fleet on a nats-server its user runs that speaks only TLS and verifies its clients'
 * certificates (`[nats] tls_ca`, `tls_cert`, `tls_key`).
 */
describe('a fleet on a nats-server that asks for TLS', () => {
  let ws: Workspace;
  let nats: TestNatsServer | undefined;
  let fleet: Fleet | undefined;
  let certs: TestCerts;
  let url: string;
  let data: string;
  /** The workspace's configuration with these `[nats]` lines after its url. */
  const withNats = (lines: string[]) => {
    const base = readFileSync(join(ws.dir, 'thymos.base.toml'), 'utf8');
    ws.writeConfig(base.replace(`url = ${JSON.stringify(url)}`, [`url = ${JSON.stringify(url)}`, ...lines].join('\n')));
    return loadConfig(ws.configPath);
  };

  before(async () => {
    const port = await freePort();
    // The host the server's certificate names: nats.js checks a certificate against `localhost` for an IP address.
    url = `nats://localhost:${port}`;
    ws = createWorkspace({ natsUrl: url, extra: '[lifecycle]\nmin_dwell_ms = 0\n[supervisor]\npool_size = 1' });
    writeFileSync(join(ws.dir, 'thymos.base.toml'), readFileSync(ws.configPath, 'utf8'));
    data = join(ws.dir, 'data');
    mkdirSync(join(ws.dir, 'certs'));
    certs = makeTestCerts(join(ws.dir, 'certs'));
    const conf = join(ws.dir, 'nats.conf');
    writeFileSync(
      conf,
      [
        `listen: "127.0.0.1:${port}"`,
        `jetstream { store_dir: ${JSON.stringify(join(ws.dir, 'js'))} }`,
        `tls { cert_file: ${JSON.stringify(certs.serverCert)}, key_file: ${JSON.stringify(certs.serverKey)}, ca_file: ${JSON.stringify(certs.ca)}, verify: true, timeout: 5 }`,
        '',
      ].join('\n'),
    );
    nats = await startNatsServer({ config: conf });
  });

  after(() => disposeOwnServerFleet(ws, fleet, nats));

  test('without its client certificate, thymos up refuses, starting nothing, with the TLS error and the keys to check', async () => {
    const config = withNats(['tls_ca = "certs/ca.pem"']);
    await assert.rejects(
      upFleet(config),
      (e: unknown) =>
        isThymosError(e, 'NATS_UNAVAILABLE') &&
        /cannot be reached over TLS: .*\[nats\] tls_ca, tls_cert, tls_key/.test((e as Error).message),
    );
    assert.equal(fleetPids(data).apps.size, 0, 'nothing was started');
  });

  test('with it, every process connects over TLS: the fleet runs, a spare of the pool is ready and an agent wakes from it; a connection without a certificate is refused', async () => {
    const config = withNats(['tls_ca = "certs/ca.pem"', 'tls_cert = "certs/client.pem"', 'tls_key = "certs/client.key"']);
    await upFleet(config);
    fleet = await connect(config);
    // A spare is ready only once it is linked to NATS: over TLS, here.
    await eventually(
      async () => ((await fleet!.status()).supervisor.pool?.ready ?? 0) >= 1 || undefined,
      60_000,
      'a spare ready in the pool',
    );
    const report = await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
    assert.equal((await fleet.status()).supervisor.pool?.hits, 1, 'the agent woke from the spare');
    assert.equal((await fleet.status()).agents.find((a) => a.id === 'elder_rowan')?.state, 'active');
    // The agent reads the world through the supervisor, over its own TLS connection.
    await fleet.world.set('quest', 'wolves', { title: 'Drive off the wolves', status: 'open' });
    const elder = await fleet.agent('elder_rowan');
    const read = (await elder.callTool({
      name: 'query_world',
      arguments: { table: 'quest', where: [{ field: 'status', op: '=', value: 'open' }] },
    })) as { structuredContent?: { rows: Array<{ title?: string }> } };
    assert.deepEqual(
      read.structuredContent?.rows.map((r) => r.title),
      ['Drive off the wolves'],
    );
    await assert.rejects(natsConnect({ servers: url, tls: { caFile: certs.ca }, maxReconnectAttempts: 0, timeout: 5000 }));
  });

  test('TLS files, or a tls:// URL, against a server without TLS: refused, never spoken to in the clear', async () => {
    const plain = await startNatsServer();
    const other = createWorkspace({ natsUrl: plain.url });
    try {
      other.writeConfig(
        readFileSync(other.configPath, 'utf8').replace(
          `url = ${JSON.stringify(plain.url)}`,
          `url = ${JSON.stringify(plain.url)}\ntls_ca = ${JSON.stringify(certs.ca)}`,
        ),
      );
      await assert.rejects(
        upFleet(loadConfig(other.configPath)),
        (e: unknown) => isThymosError(e, 'NATS_UNAVAILABLE') && /cannot be reached over TLS: .*tls/.test((e as Error).message),
      );
      // A tls:// URL asks for TLS too, with no files: nats.js alone would read it as a host and port.
      const asked = await admission(plain.url.replace('nats://', 'tls://'), {}, 3000);
      assert.equal(asked.outcome, 'unreachable');
      assert.match(asked.reason ?? '', /tls/i);
      assert.equal((await admission(plain.url, {}, 3000)).outcome, 'admitted', 'the same server, asked for no TLS');
      assert.equal(fleetPids(join(other.dir, 'data')).apps.size, 0, 'nothing was started');
    } finally {
      await plain.stop();
      await killFleet(join(other.dir, 'data'));
      other.dispose();
    }
  });
});
