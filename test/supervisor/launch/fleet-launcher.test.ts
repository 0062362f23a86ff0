import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { alive, fleetPids, killFleet, runThymos } from '../../helpers/fleet.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

/** A listener on a loopback port, standing for another program that holds it. */
async function holdPort(): Promise<Server & { port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(server, { port: (server.address() as AddressInfo).port });
}

/** Nothing of the fleet runs: no pm2 daemon and none of its apps. */
function assertNothingRuns(data: string): void {
  const { daemon, apps } = fleetPids(data);
  assert.ok(daemon === undefined || !alive(daemon), `pm2 daemon ${daemon} still runs`);
  for (const [name, pid] of apps) assert.ok(!alive(pid), `${name} (pid ${pid}) still runs`);
}

describe('thymos up fails fast, says why and leaves nothing running', () => {
  const workspaces: Workspace[] = [];
  const held: Server[] = [];
  const workspace = (extra = '', schema?: string) => {
    const ws = createWorkspace({ extra, ...(schema === undefined ? {} : { schema }) });
    workspaces.push(ws);
    return ws;
  };

  after(async () => {
    for (const s of held) s.close();
    for (const ws of workspaces) {
      await killFleet(join(ws.dir, 'data'));
      ws.dispose();
    }
  });

  test('a [nats] port another process holds is PORT_IN_USE naming the port and the key, exit 3', async () => {
    const other = await holdPort();
    held.push(other);
    const ws = workspace(['[nats]', `port = ${other.port}`].join('\n'));
    const r = await runThymos(['up'], ws.dir);
    assert.equal(r.code, 3, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `PORT_IN_USE: 127\\.0\\.0\\.1:${other.port}, the fleet's NATS port \\(\\[nats\\] port in .*thymos\\.toml\\), is in use by another process`,
      ),
    );
    assert.doesNotMatch(r.stderr, /starting nats-server/, 'nothing was started');
    assertNothingRuns(join(ws.dir, 'data'));
  });

  test("the port remembered from the fleet's last run, now held by another process, names data/run/fleet.json and how to get a new one", async () => {
    const other = await holdPort();
    held.push(other);
    const ws = workspace();
    mkdirSync(join(ws.dir, 'data', 'run'), { recursive: true });
    writeFileSync(
      join(ws.dir, 'data', 'run', 'fleet.json'),
      JSON.stringify({ nats_url: `nats://127.0.0.1:${other.port}`, managed_nats: true, nats_port: other.port }),
    );
    const r = await runThymos(['up'], ws.dir);
    assert.equal(r.code, 3, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `PORT_IN_USE: 127\\.0\\.0\\.1:${other.port}, .*remembered from the fleet's last run in .*data/run/fleet\\.json.*delete .*fleet\\.json to have a free port chosen`,
      ),
    );
    assertNothingRuns(join(ws.dir, 'data'));
  });

  test("a domain that does not evaluate is SCHEMA_INVALID with Pkl's message before anything starts, exit 2", async () => {
    const ws = workspace('', 'world.pkl');
    writeFileSync(join(ws.dir, 'world.pkl'), 'amends "no/such/Thymos.pkl"\n');
    const r = await runThymos(['up'], ws.dir);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /SCHEMA_INVALID: .*world\.pkl/);
    assert.match(r.stderr, /no\/such\/Thymos\.pkl/, "Pkl's own words name the missing module");
    assert.doesNotMatch(r.stderr, /starting/);
    assertNothingRuns(join(ws.dir, 'data'));
  });

  test("a supervisor that exits as it starts fails up at once with the supervisor's own error, and what up started is stopped", async () => {
    const ws = workspace();
    const data = join(ws.dir, 'data');
    mkdirSync(data, { recursive: true });
    // Another live process holds the supervisor's lock on this data folder: this test's own.
    writeFileSync(join(data, 'supervisor.pid'), String(process.pid));
    const r = await runThymos(['up'], ws.dir);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /starting nats-server/);
    assert.match(
      r.stderr,
      new RegExp(
        `SUPERVISOR_ALREADY_RUNNING: the supervisor exited as it started: the supervisor of .* is already running \\(pid ${process.pid}.*\\(log: .*supervisor\\.log\\)`,
      ),
    );
    assert.match(r.stderr, /stopping what was started/);
    assertNothingRuns(data);
  });

  test('an unset api_key_env variable: up --strict starts nothing (exit 2); up warns on stderr and starts the fleet', async () => {
    const variable = 'THYMOS_TEST_KEY_NOBODY_SETS';
    const ws = workspace(
      [
        '[llm.reasoning]',
        'provider = "openai-compatible"',
        'base_url = "http://127.0.0.1:9/v1"',
        'model = "m"',
        `api_key_env = "${variable}"`,
      ].join('\n'),
    );
    const data = join(ws.dir, 'data');
    const strict = await runThymos(['up', '--strict'], ws.dir);
    assert.equal(strict.code, 2, strict.stderr);
    assert.match(
      strict.stderr,
      new RegExp(`CONFIG_INVALID: llm\\.reasoning\\.api_key_env: the environment variable ${variable} is not set`),
    );
    assertNothingRuns(data);
    const up = await runThymos(['up'], ws.dir);
    assert.equal(up.code, 0, up.stderr);
    assert.match(
      up.stderr,
      new RegExp(
        `^thymos: warning: llm\\.reasoning\\.api_key_env: the environment variable ${variable} is not set\\..*thymos down\` and \`thymos up\``,
        'm',
      ),
    );
    assert.match(up.stdout, /fleet up/);
    const down = await runThymos(['down'], ws.dir);
    assert.equal(down.code, 0, down.stderr);
    assertNothingRuns(data);
  });
});
