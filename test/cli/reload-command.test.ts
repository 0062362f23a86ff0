import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect, nkeyAuthenticator } from '@nats-io/transport-node';

import { readFleetInfo } from '../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../shared/config/thymos-config.js';
import { connectsAs } from '../../shared/nats/nats-connection.js';
import { natsIdentityFile, readNatsSeed } from '../../shared/nats/nats-identity.js';
import { withDeadline } from '../../shared/platform/deadline.js';
import { alive, eventually, runThymos, startTestFleet, type TestFleet } from '../helpers/fleet.js';
import { REPO_ROOT } from '../helpers/workspace.js';

/** `thymos reload`: an edited domain applied to a running fleet, with its managed nats-server. */
describe('thymos reload', () => {
  let tf: TestFleet;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-reload-'));
  const schema = join(dir, 'crew.pkl');
  const writeDomain = (agents: string[]) =>
    writeFileSync(
      schema,
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}\nagents {\n${agents.map((id) => `  ["${id}"] { persona { name = "${id}" } }`).join('\n')}\n}\n`,
    );

  before(async () => {
    writeDomain(['ann', 'ben']);
    // The removed agent's key is refused after the reload: refusals are what the test provokes.
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'pool_size = 0'], { schema, refusals: 'expected' });
  });
  after(async () => {
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a removed agent that runs is stopped, its data kept, its key refused and its connection cut; an added one gets a key and starts', async () => {
    const config = loadConfig(tf.ws.configPath);
    const url = readFleetInfo(config)!.nats_url;
    await tf.fleet.start('ann');
    const annSeed = readNatsSeed(config.dataPath, 'agent-ann')!;
    // A connection as ann that outlives her process: the reload must cut it too.
    const held = await natsConnect({ servers: url, authenticator: nkeyAuthenticator(annSeed), maxReconnectAttempts: 0 });
    const heldClosed = held.closed();
    const supervisorBefore = (await tf.fleet.status()).supervisor.pid;

    writeDomain(['ben', 'cal']);
    const reload = await runThymos(['reload'], tf.ws.dir);
    assert.equal(reload.code, 0, reload.stderr);
    assert.match(reload.stdout, /^added cal: /m);
    assert.match(reload.stdout, /^removed ann: stopped \(a snapshot\), its data kept in .*agents\/ann, its NATS identity revoked$/m);

    const status = await tf.fleet.status();
    assert.notEqual(status.supervisor.pid, supervisorBefore, 'a new supervisor runs the new domain');
    assert.deepEqual(status.agents.map((a) => a.id).sort(), ['ben', 'cal']);
    assert.ok(existsSync(join(config.dataPath, 'agents', 'ann')), 'her data is kept');
    assert.ok(!existsSync(natsIdentityFile(config.dataPath, 'agent-ann')), 'her key is deleted');
    assert.equal(await connectsAs(url, { seed: annSeed }, 0), false, 'and refused');
    assert.notEqual(
      await withDeadline(
        heldClosed.then(() => 'closed'),
        20_000,
        () => 'open',
      ),
      'open',
      'her connection was cut',
    );

    assert.ok(existsSync(natsIdentityFile(config.dataPath, 'agent-cal')), 'cal has a key');
    const started = await tf.fleet.start('cal');
    assert.deepEqual(started.failed, []);
    assert.equal((await tf.fleet.status()).agents.find((a) => a.id === 'cal')?.state, 'active');
  });

  test('a domain that does not evaluate changes nothing: exit 2, the same supervisor, the same agents', async () => {
    const before = await tf.fleet.status();
    writeFileSync(schema, 'amends "nowhere.pkl"\nagents {');
    const reload = await runThymos(['reload'], tf.ws.dir);
    assert.equal(reload.code, 2, reload.stdout);
    assert.match(reload.stderr, /SCHEMA_INVALID|domain|pkl/i);
    const after = await tf.fleet.status();
    assert.equal(after.supervisor.pid, before.supervisor.pid);
    assert.deepEqual(
      after.agents.map((a) => [a.id, a.state]),
      before.agents.map((a) => [a.id, a.state]),
    );
    writeDomain(['ben', 'cal']);
    const up = await runThymos(['up'], tf.ws.dir);
    assert.match(up.stderr, /already running/);
  });

  test('a supervisor that restarts on a domain an edit took an agent from stops that agent rather than adopt it, and keeps its data', async () => {
    const config = loadConfig(tf.ws.configPath);
    writeDomain(['ben', 'cal']);
    await tf.fleet.start('ben');
    const status = await tf.fleet.status();
    const before = status.supervisor.pid;
    const benPid = status.agents.find((a) => a.id === 'ben')?.pid;
    assert.ok(benPid, 'ben runs');
    writeDomain(['cal']);
    // pm2 restarts a supervisor killed -9, on the domain as the file now says.
    process.kill(before, 'SIGKILL');
    const after = await eventually(
      async () => {
        const s = await tf.fleet.status();
        return s.supervisor.pid !== before ? s : undefined;
      },
      60_000,
      'the supervisor to be restarted',
    );
    assert.deepEqual(
      after.agents.map((a) => a.id),
      ['cal'],
    );
    await eventually(() => (alive(benPid) ? undefined : true), 30_000, "ben's process to be stopped");
    assert.ok(existsSync(join(config.dataPath, 'agents', 'ben')), 'its data is kept');
  });
});
