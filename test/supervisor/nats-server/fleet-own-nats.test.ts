import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect } from '@nats-io/transport-node';

import { approver } from '../../../client/approver.js';
import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { admission, connectsAs } from '../../../shared/nats/nats-connection.js';
import { ensureNatsIdentity, readNatsSeed, removeNatsIdentity } from '../../../shared/nats/nats-identity.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { disposeOwnServerFleet, eventually, fleetPids, killFleet, runThymos } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, VILLAGE_SCHEMA, type Workspace } from '../../helpers/workspace.js';

/**
 * A fleet on a nats-server its user runs (`[nats] url`), given the fleet's users by
 * `thymos nats-config` and told to connect as them (`[nats] identities`).
 */
describe('a fleet on a nats-server you run, with the fleet’s users', () => {
  let ws: Workspace;
  let nats: TestNatsServer | undefined;
  let fleet: Fleet | undefined;
  let url: string;
  let data: string;

  before(async () => {
    url = `nats://127.0.0.1:${await freePort()}`;
    ws = createWorkspace({ natsUrl: url, extra: '[lifecycle]\nmin_dwell_ms = 0\n[supervisor]\npool_size = 0' });
    ws.writeConfig(
      readFileSync(ws.configPath, 'utf8').replace(`url = ${JSON.stringify(url)}`, `url = ${JSON.stringify(url)}\nidentities = true`),
    );
    data = join(ws.dir, 'data');
  });

  after(() => disposeOwnServerFleet(ws, fleet, nats));

  test('thymos nats-config makes the identities and writes the fleet’s account to include, relative to the server’s configuration; run twice it changes nothing', async () => {
    const serverConf = join(ws.dir, 'nats', 'nats.conf');
    const without = await runThymos(['nats-config'], ws.dir);
    assert.equal(without.code, 2, "the server's configuration is required: include paths are relative to it");
    assert.match(without.stderr, /--server-config/);
    mkdirSync(join(ws.dir, 'nats'), { recursive: true });
    writeFileSync(serverConf, '');
    // What an earlier Thymos wrote: the users outside any account, which a second fleet's could not sit beside.
    const earlier = join(data, 'run', 'nats-users.conf');
    mkdirSync(join(data, 'run'), { recursive: true });
    writeFileSync(earlier, 'authorization {\n  users: [\n    { nkey: "UABC" } # supervisor\n  ]\n}\n');
    const first = await runThymos(['nats-config', '--server-config', serverConf, '--json'], ws.dir);
    assert.equal(first.code, 0, first.stderr);
    const report = JSON.parse(first.stdout) as {
      file: string;
      changed: boolean;
      account: string;
      users: string[];
      made: string[];
      include: string;
      retired: string | null;
    };
    assert.equal(report.changed, true);
    assert.equal(report.account, 'thymos-fleet-thymos');
    assert.equal(report.retired, earlier);
    assert.doesNotMatch(readFileSync(earlier, 'utf8'), /^[^#]/m, 'the earlier users file holds only a comment now');
    assert.match(readFileSync(report.file, 'utf8'), /^"thymos-fleet-thymos": \{\n {2}jetstream: enabled\n {2}users: \[/m);
    assert.deepEqual(report.users.filter((u) => !u.startsWith('agent-')).sort(), ['approver', 'client', 'spare', 'supervisor']);
    assert.equal(report.users.filter((u) => u.startsWith('agent-')).length, 6, 'one per agent of the village');
    assert.equal(report.include, 'include "../data/run/nats-account.conf"');
    assert.doesNotMatch(readFileSync(report.file, 'utf8'), /"SU[A-Z0-9]+"/, 'public keys only');
    assert.equal(statSync(report.file).mode & 0o777, 0o644, 'readable by a server that runs as another user');
    const again = await runThymos(['nats-config', '--server-config', serverConf, '--json'], ws.dir);
    const second = JSON.parse(again.stdout) as { changed: boolean; made: string[]; retired: string | null };
    assert.deepEqual([second.made, second.changed, second.retired], [[], false, null]);
    // The user's server, including the earlier file (empty now) and the account.
    writeFileSync(
      serverConf,
      [
        `listen: "${new URL(url).host}"`,
        `jetstream { store_dir: ${JSON.stringify(join(ws.dir, 'nats', 'js'))} }`,
        'include "../data/run/nats-users.conf"',
        `accounts {\n  ${report.include}\n}`,
        '',
      ].join('\n'),
    );
    nats = await startNatsServer({ config: serverConf });
  });

  test('thymos up refuses, starting nothing, while the users file is not today’s or the server does not admit one of the fleet’s identities, and names it and the fix', async () => {
    const stale = /nats-account\.conf does not say what the fleet's identities may do today .*: run thymos nats-config/;
    removeNatsIdentity(data, 'client');
    ensureNatsIdentity(data, 'client');
    await assert.rejects(
      upFleet(loadConfig(ws.configPath)),
      (e: unknown) => isThymosError(e, 'NATS_UNAVAILABLE') && stale.test((e as Error).message),
    );
    // Written again but not reloaded: the server does not admit the new key yet.
    const written = await runThymos(['nats-config', '--server-config', join(ws.dir, 'nats', 'nats.conf')], ws.dir);
    assert.equal(written.code, 0, written.stderr);
    assert.match(written.stdout, /^wrote .*nats-account\.conf: the account thymos-fleet-thymos, 10 users/);
    await assert.rejects(
      upFleet(loadConfig(ws.configPath)),
      (e: unknown) =>
        isThymosError(e, 'NATS_UNAVAILABLE') &&
        /does not admit the fleet's identities client: run thymos nats-config/.test((e as Error).message),
    );
    assert.equal(fleetPids(data).apps.size, 0, 'nothing was started');
    // A users file that grants an agent other than what it may do today is not current either.
    const include = join(data, 'run', 'nats-account.conf');
    const today = readFileSync(include, 'utf8');
    writeFileSync(include, today.replace(/"thymos\.agent\.\*\.inbox\.[a-z_]+"/, '"thymos.agent.*.inbox"'));
    await assert.rejects(
      upFleet(loadConfig(ws.configPath)),
      (e: unknown) => isThymosError(e, 'NATS_UNAVAILABLE') && stale.test((e as Error).message),
    );
    writeFileSync(include, today);
    // Reloaded, the server admits the new key.
    process.kill(nats!.pid, 'SIGHUP');
    await eventually(
      async () => ((await connectsAs(url, { seed: readNatsSeed(data, 'client') }, 0)) ? true : undefined),
      10_000,
      'the reloaded server to admit the new client key',
    );
  });

  test('thymos up refuses a server that admits anyone (the users not in force) and one that cannot be reached, naming which', async () => {
    const open = await startNatsServer();
    const other = createWorkspace({ natsUrl: open.url });
    try {
      other.writeConfig(
        readFileSync(other.configPath, 'utf8').replace(
          `url = ${JSON.stringify(open.url)}`,
          `url = ${JSON.stringify(open.url)}\nidentities = true`,
        ),
      );
      const otherData = join(other.dir, 'data');
      for (const who of ['supervisor', 'client', 'spare'] as const) ensureNatsIdentity(otherData, who);
      await assert.rejects(
        upFleet(loadConfig(other.configPath)),
        (e: unknown) => isThymosError(e, 'NATS_UNAVAILABLE') && /admits connections with no identity/.test((e as Error).message),
      );
      await open.stop();
      await assert.rejects(
        upFleet(loadConfig(other.configPath)),
        (e: unknown) =>
          isThymosError(e, 'NATS_UNAVAILABLE') && /cannot be reached: .*; start it, or check the URL/.test((e as Error).message),
      );
      assert.equal(fleetPids(otherData).apps.size, 0, 'nothing was started');
    } finally {
      await open.stop();
      await killFleet(join(other.dir, 'data'));
      other.dispose();
    }
  });

  test('with them, the fleet runs as on its own server: agents connect as themselves, anyone else is refused', async () => {
    const config = loadConfig(ws.configPath);
    await upFleet(config);
    fleet = await connect(config);
    const report = await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
    assert.equal((await fleet.status()).agents.find((a) => a.id === 'elder_rowan')?.state, 'active');
    const desk = await approver(config);
    try {
      assert.deepEqual(await desk.approvals(), [], 'the approver connects as itself, with the key thymos nats-config made');
    } finally {
      await desk.close();
    }
    await assert.rejects(natsConnect({ servers: url, maxReconnectAttempts: 0 }), /Authorization Violation/);
  });

  test('thymos reload on a server you run: writes the users, says to reload that server and exits 1 until it admits the added agent and refuses the removed ones; then applies the domain', async () => {
    const crew = join(ws.dir, 'crew.pkl');
    // elder_rowan stays (it runs), cal is added, the rest of the village is removed.
    writeFileSync(
      crew,
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}\nagents {\n  ["elder_rowan"] { persona { name = "Elder Rowan" } }\n  ["cal"] { persona { name = "Cal" } }\n}\n`,
    );
    ws.writeConfig(
      readFileSync(ws.configPath, 'utf8').replace(`schema = ${JSON.stringify(VILLAGE_SCHEMA)}`, `schema = ${JSON.stringify(crew)}`),
    );
    const removedSeed = readNatsSeed(data, 'agent-bram_smith')!;
    const first = await runThymos(['reload'], ws.dir);
    assert.equal(first.code, 1, first.stdout);
    assert.match(
      first.stderr,
      /admits no agent-cal, still admits agent-bram_smith.*: reload that server \(nats-server --signal reload\), then run thymos reload again/,
    );
    assert.equal(
      (await fleet!.status()).agents.some((a) => a.id === 'cal'),
      false,
      'nothing else changed',
    );
    // Its owner reloads the server (SIGHUP), with the users file thymos reload wrote.
    process.kill(nats!.pid, 'SIGHUP');
    const second = await eventually(
      async () => {
        const r = await runThymos(['reload'], ws.dir);
        return r.code === 0 ? r : undefined;
      },
      30_000,
      'the server to admit cal once reloaded',
    );
    assert.match(second.stdout, /^added cal: /m);
    assert.match(second.stdout, /^removed bram_smith: its data kept/m);
    assert.deepEqual((await fleet!.status()).agents.map((a) => a.id).sort(), ['cal', 'elder_rowan']);
    assert.equal((await admission(url, { seed: removedSeed }, 3000)).outcome, 'refused', "a removed agent's key is refused");
    assert.equal((await fleet!.start('cal')).failed.length, 0, 'the added agent starts, connecting as itself');
  });
});
