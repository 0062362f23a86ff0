import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { runThymos } from '../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../helpers/nats-server.js';
import { createWorkspace, type Workspace } from '../helpers/workspace.js';

/** The compiled `thymos` command, run as a user runs it, in a project folder with no fleet up. */
describe('the thymos command without a running fleet', () => {
  let ws: Workspace;
  let nats: TestNatsServer;

  before(async () => {
    nats = await startNatsServer();
    ws = createWorkspace({ natsUrl: nats.url, extra: '[supervisor]\nrequest_timeout_ms = 3000' });
  });

  after(async () => {
    ws.dispose();
    await nats.stop();
  });

  test('help lists the commands and exits 0; no command prints it and exits 2; an unknown command is named', async () => {
    const help = await runThymos(['--help'], ws.dir);
    assert.equal(help.code, 0);
    for (const command of ['up', 'down', 'status', 'reconcile', 'call', 'logs', 'validate']) assert.match(help.stdout, new RegExp(`\\b${command}\\b`));
    assert.equal((await runThymos([], ws.dir)).code, 2);
    const unknown = await runThymos(['reconcle'], ws.dir);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command "reconcle"/);
  });

  test('validate passes the village project and names the file, line and key of a bad setting with exit 2', async () => {
    const ok = await runThymos(['validate'], ws.dir);
    assert.equal(ok.code, 0, ok.stderr);
    writeFileSync(join(ws.dir, 'bad.toml'), '[fleet]\nname = "North Fleet"\n');
    const bad = await runThymos(['validate', '--config', 'bad.toml'], ws.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /CONFIG_INVALID: .*bad\.toml:2: fleet\.name: expected a fleet name/);
  });

  test('status with no supervisor on the configured NATS says the fleet is not running, and how to start it', async () => {
    const status = await runThymos(['status', '--json'], ws.dir);
    assert.equal(status.code, 1);
    assert.match(status.stderr, /FLEET_NOT_RUNNING: .*thymos\.supervisor\.status.*thymos up/);
  });
});
