import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { locateNatsServer } from '../../supervisor/nats-server/server-binary.js';
import { createWorkspace, REPO_ROOT, THYMOS_BIN, type Workspace } from '../helpers/workspace.js';

/** The README's first command (`npm run example`) and what it runs first: `thymos setup`. */
const exampleScript = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { example: string } }).scripts
  .example;
const firstCommandSetup = exampleScript.split('&&')[0]!.trim();

/** What the stand-in apt-get does: installs a nats-server (one that prints its version), or fails to. */
type FakeApt = 'installs' | 'fails';

/**
 * Runs a shell command on this machine with nats-server gone: PATH holds only `node`, an empty
 * directory is mounted over /usr/sbin (where Debian's package puts the binary), and a stand-in
 * is mounted over /usr/bin/apt-get that logs each call to `aptLog` (so the host's packages are
 * never touched). A user namespace gives this without root's powers; inside it the command runs
 * as root (uid 0 there) or, nested once more, as a plain user (uid 65534).
 */
function withoutNatsServer(command: string, bin: string, options: { user: 'root' | 'plain'; apt: string }) {
  const inner = options.user === 'plain' ? `exec ${which('unshare')} --user /bin/sh -c "$0"` : 'exec /bin/sh -c "$0"';
  const script = `${which('mount')} -t tmpfs none /usr/sbin && ${which('mount')} --bind ${options.apt} /usr/bin/apt-get && ${inner}`;
  return spawnSync(which('unshare'), ['--user', '--map-root-user', '--mount', '/bin/sh', '-c', script, command], {
    cwd: REPO_ROOT,
    env: { PATH: bin, HOME: tmpdir(), LANG: 'C' },
    encoding: 'utf8',
    timeout: 120_000,
  });
}

/** A stand-in for apt-get: logs its arguments, then installs a nats-server into /usr/sbin or fails as apt-get does. */
function fakeApt(dir: string, behaviour: FakeApt): { path: string; log: string } {
  const log = join(dir, `apt-${behaviour}.log`);
  const path = join(dir, `apt-get-${behaviour}`);
  const install =
    behaviour === 'installs'
      ? `printf '#!/bin/sh\\necho "nats-server: v2.9.10"\\n' > /usr/sbin/nats-server && chmod 755 /usr/sbin/nats-server`
      : `echo "E: Unable to locate package nats-server" >&2; exit 100`;
  writeFileSync(path, `#!/bin/sh\necho "$@" >> ${log}\ncase "$*" in *install*) ${install};; esac\nexit 0\n`, { mode: 0o755 });
  return { path, log };
}

/** A program on this machine's PATH, by its full path (the commands above run with a PATH of their own). */
function which(name: string): string {
  return execFileSync('/bin/sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
}

/** No line of a Node stack trace. */
const NO_TRACE = /^\s+at /m;

describe('setting up the machine: nats-server', () => {
  const root = mkdtempSync(join(tmpdir(), 'thymos-setup-'));
  const bin = join(root, 'bin');
  let ws: Workspace;
  let installs: { path: string; log: string };
  let fails: { path: string; log: string };

  before(() => {
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    ws = createWorkspace({ extra: '[supervisor]\nrequest_timeout_ms = 3000' });
    installs = fakeApt(root, 'installs');
    fails = fakeApt(root, 'fails');
    assert.ok(existsSync('/usr/bin/apt-get'), 'a Debian machine: apt-get is what setup runs');
    const probe = withoutNatsServer('id -u', '/usr/bin:/bin', { user: 'plain', apt: fails.path });
    assert.equal(
      probe.stdout.trim(),
      '65534',
      `a user namespace for a plain user without nats-server (util-linux unshare): ${probe.stderr}`,
    );
  });

  after(() => {
    ws.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  test("the first command's set-up, as a plain user without nats-server, stops at once with one line naming the command to run, exit 4, and runs no apt-get", () => {
    assert.match(firstCommandSetup, /thymos\.ts setup\b/, `npm run example begins with thymos setup: ${exampleScript}`);
    const run = withoutNatsServer(firstCommandSetup, bin, { user: 'plain', apt: fails.path });
    assert.equal(run.status, 4, `${run.stdout}\n${run.stderr}`);
    const lines = run.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, run.stderr);
    assert.equal(
      lines[0],
      'thymos: NATS_SERVER_MISSING: nats-server is not installed; run `sudo apt-get install nats-server`, or set [nats] url in thymos.toml to a NATS server you run',
    );
    assert.doesNotMatch(run.stdout + run.stderr, NO_TRACE);
    assert.equal(run.stdout, '', 'nothing said of installing');
    assert.equal(existsSync(fails.log), false, 'apt-get never ran');
  });

  test('as root, setup says what it installs before apt-get runs, installs nats-server, and a second run installs nothing', () => {
    const setup = `node ${THYMOS_BIN} setup --config ${ws.configPath}`;
    const run = withoutNatsServer(`${setup} && echo second run && ${setup}`, bin, { user: 'root', apt: installs.path });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const [first, second] = run.stdout.split('second run\n');
    assert.match(
      first!,
      /^nats-server is not installed: installing Debian's package \(apt-get update; apt-get install -y --no-install-recommends nats-server\)\. The package also adds a system user 'nats' and a nats-server\.service/,
    );
    assert.match(first!, /\ninstalled \/usr\/sbin\/nats-server\nnats-server: \/usr\/sbin\/nats-server \(v2\.9\.10\)\n$/);
    assert.equal(second, 'nats-server: /usr/sbin/nats-server (v2.9.10)\n');
    assert.deepEqual(
      readFileSync(installs.log, 'utf8').split('\n').filter(Boolean),
      ['update -qq', 'install -y -qq --no-install-recommends nats-server'],
      'apt-get ran twice, in the first run only',
    );
  });

  test('as root, an apt-get that fails is one line with its own last words and exit 4', () => {
    const run = withoutNatsServer(`node ${THYMOS_BIN} setup --config ${ws.configPath}`, bin, { user: 'root', apt: fails.path });
    assert.equal(run.status, 4, `${run.stdout}\n${run.stderr}`);
    assert.equal(
      run.stderr,
      'thymos: NATS_SERVER_MISSING: apt-get install nats-server failed (exit 100): E: Unable to locate package nats-server; run `apt-get install nats-server`, or set [nats] url in thymos.toml to a NATS server you run\n',
    );
    assert.match(run.stdout, /^nats-server is not installed: installing/);
  });

  test('thymos up and the village game loop (the library) without nats-server: the same line, exit 4, nothing started', () => {
    const up = withoutNatsServer(`node ${THYMOS_BIN} up --config ${ws.configPath}`, bin, { user: 'plain', apt: fails.path });
    assert.equal(up.status, 4, `${up.stdout}\n${up.stderr}`);
    assert.match(
      up.stderr,
      /^thymos: NATS_SERVER_MISSING: nats-server is not installed; run `sudo apt-get install nats-server`, or set \[nats\] url in thymos\.toml to a NATS server you run\n$/,
    );
    assert.equal(existsSync(join(ws.dir, 'data', 'pm2')), false, 'no pm2 daemon was started');

    const loop = withoutNatsServer(`node --import tsx examples/village/game-loop.ts ${ws.configPath}`, bin, {
      user: 'plain',
      apt: fails.path,
    });
    assert.equal(loop.status, 4, `${loop.stdout}\n${loop.stderr}`);
    assert.equal(loop.stderr, up.stderr, 'the library ends the loop with the line the command prints');
    assert.doesNotMatch(loop.stdout + loop.stderr, NO_TRACE);
    assert.equal(existsSync(join(ws.dir, 'data', 'pm2')), false, 'no pm2 daemon was started');
  });

  test('with nats-server installed, setup names it and installs nothing, run after run', () => {
    const path = locateNatsServer();
    assert.ok(path, 'nats-server is installed on this machine (.ci/run installs it)');
    for (let i = 0; i < 2; i++) {
      const text = spawnSync(process.execPath, [THYMOS_BIN, 'setup', '--config', ws.configPath], { encoding: 'utf8' });
      assert.equal(text.status, 0, text.stderr);
      assert.match(
        text.stdout,
        new RegExp(`^nats-server: ${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(v\\d+\\.\\d+\\.\\d+\\S*\\)\\n$`),
      );
    }
    const json = spawnSync(process.execPath, [THYMOS_BIN, 'setup', '--config', ws.configPath, '--json'], { encoding: 'utf8' });
    assert.equal(json.status, 0, json.stderr);
    const { nats_server: found } = JSON.parse(json.stdout) as {
      nats_server: { needed: boolean; path: string; version: string; installed: boolean };
    };
    assert.deepEqual({ ...found, version: undefined }, { needed: true, path, version: undefined, installed: false });
    assert.match(found.version, /^v\d+\.\d+\.\d+/);
  });

  test('a nats-server in a relative PATH entry or a directory of that name is not taken for the binary', () => {
    const here = join(root, 'cwd');
    mkdirSync(join(here, 'sub', 'nats-server'), { recursive: true });
    writeFileSync(join(here, 'nats-server'), '#!/bin/sh\necho planted\n', { mode: 0o755 });
    const run = spawnSync(process.execPath, [THYMOS_BIN, 'setup', '--config', ws.configPath, '--json'], {
      cwd: here,
      env: { PATH: `.:${join(here, 'sub')}:${process.env.PATH}` },
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { nats_server: { path: string } }).nats_server.path, locateNatsServer());
  });

  test('with [nats] url set, nats-server is not needed, and bad arguments are a usage error', () => {
    const remote = createWorkspace({ natsUrl: 'nats://127.0.0.1:4999' });
    try {
      const run = withoutNatsServer(`node ${THYMOS_BIN} setup --config ${remote.configPath}`, bin, { user: 'plain', apt: fails.path });
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout, 'nats-server: not needed ([nats] url = nats://127.0.0.1:4999)\n');
    } finally {
      remote.dispose();
    }
    const bad = spawnSync(process.execPath, [THYMOS_BIN, 'setup', '--instal'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^thymos: USAGE: Unknown option '--instal'/);
  });
});
