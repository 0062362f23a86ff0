import assert from 'node:assert/strict';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect } from '@nats-io/transport-node';

import { approver } from '../../../client/approver.js';
import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { disposeOwnServerFleet, fleetPids } from '../../helpers/fleet.js';
import { makeTestOperator, type TestOperator } from '../../helpers/nats-operator.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

/**
 * A fleet on a nats-server in operator mode (users are JWTs an operator signed, as `nsc` makes
 * them), each process connecting with its own credentials file (`[nats] credentials`).
 */
describe('a fleet on a nats-server in operator mode, with credentials files', () => {
  let ws: Workspace;
  let nats: TestNatsServer | undefined;
  let fleet: Fleet | undefined;
  let operator: TestOperator;
  let url: string;
  let creds: string;
  let data: string;

  before(async () => {
    const port = await freePort();
    url = `nats://127.0.0.1:${port}`;
    ws = createWorkspace({ natsUrl: url, extra: '[lifecycle]\nmin_dwell_ms = 0\n[supervisor]\npool_size = 0' });
    ws.writeConfig(
      readFileSync(ws.configPath, 'utf8').replace(`url = ${JSON.stringify(url)}`, `url = ${JSON.stringify(url)}\ncredentials = "creds"`),
    );
    data = join(ws.dir, 'data');
    creds = join(ws.dir, 'creds');
    operator = await makeTestOperator();
    for (const who of ['supervisor', 'spare', 'agent-elder_rowan']) await operator.creds(creds, who);
    const conf = join(ws.dir, 'nats.conf');
    writeFileSync(
      conf,
      [`listen: "127.0.0.1:${port}"`, `jetstream { store_dir: ${JSON.stringify(join(ws.dir, 'js'))} }`, ...operator.config, ''].join('\n'),
    );
    nats = await startNatsServer({ config: conf });
  });

  after(() => disposeOwnServerFleet(ws, fleet, nats));

  test('thymos up refuses, starting nothing, while an identity’s file is missing or others may read it, naming the file', async () => {
    await assert.rejects(
      upFleet(loadConfig(ws.configPath)),
      (e: unknown) => isThymosError(e, 'NATS_UNAVAILABLE') && /no NATS credentials file .*creds\/client\.creds/.test((e as Error).message),
    );
    const client = await operator.creds(creds, 'client');
    chmodSync(client, 0o644);
    await assert.rejects(
      upFleet(loadConfig(ws.configPath)),
      (e: unknown) =>
        isThymosError(e, 'NATS_UNAVAILABLE') && /client\.creds may be read by others \(mode 644\).*chmod 600/.test((e as Error).message),
    );
    chmodSync(client, 0o600);
    assert.equal(fleetPids(data).apps.size, 0, 'nothing was started');
  });

  test('with its files, each process connects as its own user: the fleet runs and an agent wakes; one without a file does not start, named', async () => {
    const config = loadConfig(ws.configPath);
    await upFleet(config);
    fleet = await connect(config);
    const woke = await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(woke.failed, []);
    await fleet.world.set('quest', 'ford', { title: 'Mend the ford', status: 'open' });
    const elder = await fleet.agent('elder_rowan');
    const read = (await elder.callTool({
      name: 'query_world',
      arguments: { table: 'quest', where: [{ field: 'status', op: '=', value: 'open' }] },
    })) as { structuredContent?: { rows: Array<{ title?: string }> } };
    assert.deepEqual(
      read.structuredContent?.rows.map((r) => r.title),
      ['Mend the ford'],
    );
    const refused = await fleet.reconcile({ agents: { mira_herbalist: { relevance: 1 } } });
    const failed = refused.failed.find((f) => f.id === 'mira_herbalist');
    assert.ok(failed, JSON.stringify(refused));
    assert.match(JSON.stringify(failed), /AGENT_START_FAILED.*no NATS credentials file .*agent-mira_herbalist\.creds/);
    // The approver is not needed to run the fleet: without its file it alone is refused, named; with it, it connects as itself.
    await assert.rejects(
      approver(config),
      (e: unknown) =>
        isThymosError(e, 'NATS_UNAVAILABLE') && /no NATS credentials file .*creds\/approver\.creds/.test((e as Error).message),
    );
    await operator.creds(creds, 'approver');
    const desk = await approver(config);
    try {
      assert.deepEqual(await desk.approvals(), []);
    } finally {
      await desk.close();
    }
    await assert.rejects(natsConnect({ servers: url, maxReconnectAttempts: 0 }), /Authorization Violation/);
  });

  test('credentials need url, and are not identities: the configuration says which key and why', () => {
    for (const [lines, why] of [
      ['[nats]\ncredentials = "creds"\n', /nats\.credentials: expected credentials only with url/],
      [
        `[nats]\nurl = "${url}"\nidentities = true\ncredentials = "creds"\n`,
        /nats\.credentials: expected identities or credentials, not both/,
      ],
      [
        `[nats]\nurl = "${url}"\ncredentials = "nowhere"\n`,
        /nats\.credentials: expected a folder of <identity>\.creds files, got .*nowhere/,
      ],
    ] as const) {
      const file = join(ws.dir, 'other.toml');
      writeFileSync(file, lines);
      assert.throws(
        () => loadConfig(file),
        (e: unknown) => isThymosError(e, 'CONFIG_INVALID') && why.test((e as Error).message),
      );
      rmSync(file);
    }
  });
});
