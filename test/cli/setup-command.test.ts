import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { locateNatsServer } from '../../supervisor/pm2/nats-server-binary.js';
import { createWorkspace, REPO_ROOT, THYMOS_BIN, type Workspace } from '../helpers/workspace.js';

/** The README's first command (`npm run example`) and what it runs first: `thymos setup`. */
const exampleScript = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { example: string } }).scripts.example;
const firstCommandSetup = exampleScript.split('&&')[0]!.trim();

/**
 * Runs a shell command as a plain user (uid 65534) on this machine with nats-server gone:
 * PATH holds only `node`, and an empty directory is mounted over /usr/sbin, where Debian's
 * package puts the binary. A user namespace (unshare) gives both without root's powers.
 */
function withoutNatsServer(command: string, bin: string, cwd = REPO_ROOT) {
  const script = `${which('mount')} -t tmpfs none /usr/sbin && exec ${which('unshare')} --user /bin/sh -c "$0"`;
  return spawnSync(which('unshare'), ['--user', '--map-root-user', '--mount', '/bin/sh', '-c', script, command], {
    cwd,
    env: { PATH: bin, HOME: tmpdir(), LANG: 'C' },
    encoding: 'utf8',
    timeout: 120_000,
  });
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

  before(() => {
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    ws = createWorkspace({ extra: '[supervisor]\nrequest_timeout_ms = 3000' });
    const probe = withoutNatsServer('id -u', '/usr/bin:/bin');
    assert.equal(probe.stdout.trim(), '65534', `a user namespace for a plain user without nats-server (util-linux unshare): ${probe.stderr}`);
  });

  after(() => {
    ws.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  test("the first command's set-up, as a plain user without nats-server, stops at once with one line naming the command to run, exit 4, and installs nothing", () => {
    assert.match(firstCommandSetup, /thymos\.ts setup\b/, `npm run example begins with thymos setup: ${exampleScript}`);
    const dpkgStatus = existsSync('/var/lib/dpkg/status') ? statSync('/var/lib/dpkg/status').mtimeMs : undefined;
    const run = withoutNatsServer(firstCommandSetup, bin);
    assert.equal(run.status, 4, `${run.stdout}\n${run.stderr}`);
    const lines = run.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, run.stderr);
    const install = existsSync('/usr/bin/apt-get') ? 'sudo apt-get install nats-server' : process.platform === 'darwin' ? 'brew install nats-server' : 'https://github.com/nats-io/nats-server/releases';
    assert.ok(lines[0]!.startsWith('thymos: NATS_SERVER_MISSING: nats-server is not installed; '), lines[0]);
    assert.ok(lines[0]!.includes(install), `names ${install}: ${lines[0]}`);
    assert.match(lines[0]!, /or set \[nats\] url in thymos\.toml/);
    assert.doesNotMatch(run.stdout + run.stderr, NO_TRACE);
    assert.doesNotMatch(run.stdout, /installing/);
    if (dpkgStatus !== undefined) assert.equal(statSync('/var/lib/dpkg/status').mtimeMs, dpkgStatus, 'the package database is untouched');
  });

  test('thymos up and the village game loop (the library) without nats-server: the same line, exit 4, nothing started', () => {
    const up = withoutNatsServer(`node ${THYMOS_BIN} up --config ${ws.configPath}`, bin);
    assert.equal(up.status, 4, `${up.stdout}\n${up.stderr}`);
    assert.match(up.stderr, /^thymos: NATS_SERVER_MISSING: nats-server is not installed; run `[^`]+`, or set \[nats\] url in thymos\.toml to a NATS server you run\n$/);
    assert.doesNotMatch(up.stderr, NO_TRACE);
    assert.equal(existsSync(join(ws.dir, 'data', 'pm2')), false, 'no pm2 daemon was started');

    const loop = withoutNatsServer(`node --import tsx examples/village/game-loop.ts ${ws.configPath}`, bin);
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
      assert.match(text.stdout, new RegExp(`^nats-server: ${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(v\\d+\\.\\d+\\.\\d+\\S*\\)\\n$`));
    }
    const json = spawnSync(process.execPath, [THYMOS_BIN, 'setup', '--config', ws.configPath, '--json'], { encoding: 'utf8' });
    assert.equal(json.status, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), { nats_server: { needed: true, path, version: JSON.parse(json.stdout).nats_server.version, installed: false } });
    assert.match(JSON.parse(json.stdout).nats_server.version, /^v\d+\.\d+\.\d+/);
  });

  test('with [nats] url set, nats-server is not needed, and bad arguments are a usage error', () => {
    const remote = createWorkspace({ natsUrl: 'nats://127.0.0.1:4999' });
    try {
      const run = withoutNatsServer(`node ${THYMOS_BIN} setup --config ${remote.configPath}`, bin);
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
