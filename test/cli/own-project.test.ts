import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ensureModel } from '../helpers/embedding-model.js';
import { eventually, killFleet } from '../helpers/fleet.js';
import { terminal } from '../helpers/terminal.js';
import { REPO_ROOT } from '../helpers/workspace.js';

/**
 * The README's "your own project", as a user outside the repository does it: the packed
 * package installed into an empty folder (no .npmrc there, nothing from the repository on the
 * path), then setup, glossary, init, validate, up, reconcile, tools, the loop script, top, logs and
 * down; the last test holds the README's block to the commands run here.
 */
describe('a project of its own, from the packed package', () => {
  const root = mkdtempSync(join(tmpdir(), 'thymos-own-'));
  const project = join(root, 'my-town');
  /** The environment of a user's shell: none of the npm variables `npm test` sets, nor THYMOS_CONFIG. */
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_|^THYMOS_/i.test(k)));
  const run = (cmd: string, args: string[], cwd = project) => spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 300_000 });
  /** Each command run in the project, as a user types it: `npx thymos up`, `node loop.mjs`. */
  const ran: string[] = [];
  const thymos = (...args: string[]) => {
    ran.push(['npx', 'thymos', ...args].join(' '));
    return run(join(project, 'node_modules', '.bin', 'thymos'), args);
  };
  let tarball = '';

  before(() => {
    ensureModel();
    mkdirSync(project);
    // dist is built by npm test's pretest; --ignore-scripts keeps pack from building it again.
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', root], { cwd: REPO_ROOT, env, stdio: 'ignore' });
    const tgz = readdirSync(root).find((f) => f.endsWith('.tgz'))!;
    tarball = join(root, tgz);
    execFileSync('npm', ['init', '-y'], { cwd: project, env, stdio: 'ignore' });
    ran.push('mkdir my-town && cd my-town && npm init -y');
    const install = run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline']);
    ran.push(`npm install ${tarball}`);
    assert.equal(install.status, 0, `npm install: ${install.stderr}`);
    assert.doesNotMatch(install.stderr, /EBADENGINE/, 'no dependency refuses the Node versions the README names');
  });

  after(async () => {
    thymos('down');
    await killFleet(join(project, 'data'));
    rmSync(root, { recursive: true, force: true });
  });

  test('the install brings no ONNX Runtime (nothing downloads), and the offline model comes with the package', () => {
    assert.equal(existsSync(join(project, 'node_modules', 'onnxruntime-node')), false);
    assert.equal(existsSync(join(project, 'node_modules', 'thymos', 'models', 'glove-100d', 'vectors.f32')), true);
  });

  test("thymos/client loads without SurrealDB's native engine; thymos, thymos/supervisor and thymos/agent are there for who embeds them", () => {
    const probe = (spec: string) => {
      const script = `const m = await import(${JSON.stringify(spec)}); const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
        process.stdout.write(JSON.stringify({ names: Object.keys(m).sort(), native: maps.split('\\n').filter((l) => /surrealdb/.test(l) && l.endsWith('.node')).length }));`;
      const out = run(process.execPath, ['--input-type=module', '-e', script]);
      assert.equal(out.status, 0, `${spec}: ${out.stderr}`);
      return JSON.parse(out.stdout) as { names: string[]; native: number };
    };
    const client = probe('thymos/client');
    assert.equal(client.native, 0, 'no @surrealdb/node library mapped');
    for (const name of ['connect', 'loadConfig', 'ThymosError', 'isThymosError', 'exitWithError', 'WorldClient'])
      assert.ok(client.names.includes(name), `thymos/client exports ${name}`);
    assert.ok(!client.names.includes('upFleet'), 'upFleet (pm2) is not on the client');
    const all = probe('thymos');
    assert.ok(all.native > 0, 'the full package maps the native engine, so the probe can see it');
    for (const name of client.names) assert.ok(all.names.includes(name), `thymos still exports ${name}`);
    assert.ok(probe('thymos/supervisor').names.includes('upFleet'));
    assert.ok(probe('thymos/agent').names.includes('runAgentProcess'));
  });

  test('setup, glossary, init, validate, up, reconcile, tools, the loop script, top, logs and down all work there', async () => {
    // nats-server is on this machine: setup says so and installs nothing.
    const setup = thymos('setup');
    assert.equal(setup.status, 0, setup.stderr);
    const glossary = thymos('glossary');
    assert.equal(glossary.status, 0, glossary.stderr);
    assert.match(glossary.stdout, /^built .*models\/glossary \(.*fra: \d+ words/);

    const init = thymos('init');
    assert.equal(init.status, 0, init.stderr);
    assert.match(readFileSync(join(project, 'world.pkl'), 'utf8'), /amends "\.\/node_modules\/thymos\/schemas\/Thymos\.pkl"/);
    assert.equal(thymos('init').status, 3, 'a second init overwrites nothing');

    const validate = thymos('validate');
    assert.equal(validate.status, 0, validate.stderr);
    assert.match(validate.stdout, /agents \(2\): gate_guard, baker/);

    const up = thymos('up');
    assert.equal(up.status, 0, up.stderr);
    assert.match(up.stdout, /fleet up/);

    const reconcile = thymos('reconcile', '--context', 'context.json');
    assert.equal(reconcile.status, 0, reconcile.stderr);
    assert.match(reconcile.stdout, /started\s+gate_guard/);

    const tools = thymos('tools', 'gate_guard');
    assert.equal(tools.status, 0, tools.stderr);
    assert.match(tools.stdout, /talk_to_gate_guard/);

    // pm2 comes with the package: the README's way to see the fleet through it works here too.
    const pm2 = spawnSync(join(project, 'node_modules', '.bin', 'pm2'), ['ls'], {
      cwd: project,
      env: { ...env, PM2_HOME: join(project, 'data', 'pm2') },
      encoding: 'utf8',
    });
    assert.equal(pm2.status, 0, pm2.stderr);
    assert.match(pm2.stdout, /agent-gate_guard[^\n]*online/, pm2.stdout.slice(0, 600));

    // The library from an ES module of the project's own: the loop walks to the market and talks to the baker.
    const loop = run(process.execPath, ['loop.mjs']);
    ran.push('node loop.mjs');
    assert.equal(loop.status, 0, loop.stderr);
    assert.match(loop.stdout, /tick 1: the player is at the market; started baker/);

    // Vector search works with the packaged model and no fastembed: the supervisor serves it.
    assert.match(
      readFileSync(join(project, 'data', 'logs', 'supervisor.log'), 'utf8'),
      /"model":"custom:glove-100d","dims":100,"msg":"embedding service ready"/,
    );
    const recall = thymos('call', 'baker', 'recall', JSON.stringify({ query: 'bread and flour', strategy: 'vector' }), '--json');
    assert.equal(recall.status, 0, recall.stderr);
    const hits = (
      JSON.parse(recall.stdout) as {
        structuredContent: { results: Array<{ content: string; score: { strategy: string; vector?: number } }> };
      }
    ).structuredContent.results;
    assert.equal(hits[0]?.score.strategy, 'vector');
    assert.ok((hits[0]?.score.vector ?? 0) > 0, `a vector score: ${JSON.stringify(hits[0]?.score)}`);

    const top = thymos('top', '--once', '--interval', '300');
    assert.equal(top.status, 0, top.stderr);
    assert.match(top.stdout, /gate_guard\s+\S+\s/);
    assert.match(top.stdout, /baker\s+active/);

    // Live, on a terminal: tmux runs it; it draws, redraws, re-sorts on a key and quits on q.
    ran.push('npx thymos top');
    const live = terminal('top', `${join(project, 'node_modules', '.bin', 'thymos')} top --interval 300`, {
      cwd: project,
      env,
      height: 20,
    });
    try {
      const first = await live.until(/thymos top — (\d\d:\d\d:\d\d)/, 30_000, 'a first frame');
      await eventually(
        () => {
          const t = /thymos top — (\d\d:\d\d:\d\d)/.exec(live.screen())?.[1];
          return t && t !== first ? t : undefined;
        },
        30_000,
        'a later frame in its place',
      );
      assert.match(live.screen(), /sorted by cpu/);
      live.keys('m');
      await live.until(/sorted by memory/, 10_000, 'sorted by memory after m');
      assert.match(live.screen(), /baker\s+active\s+active/);
      live.keys('q');
      await live.until(/exited 0/, 10_000, 'top to quit on q with 0');
    } finally {
      live.close();
    }

    const logs = thymos('logs', '--all', '-n', '5');
    assert.equal(logs.status, 0, logs.stderr);
    assert.match(logs.stdout, /^supervisor\s+\| \[\d{4}-\d\d-\d\d [\d:.]+\] INFO: /m);

    // The loop script ends on a Thymos error as the command does: one line, the code's exit status.
    mkdirSync(join(project, 'broken'));
    writeFileSync(join(project, 'broken', 'loop.mjs'), readFileSync(join(project, 'loop.mjs')));
    writeFileSync(join(project, 'broken', 'thymos.toml'), '[lifecycle]\nthreshold_active = "high"\n');
    const broken = run(process.execPath, ['loop.mjs'], join(project, 'broken'));
    assert.equal(broken.status, 2, broken.stderr);
    assert.match(broken.stderr, /^thymos: CONFIG_INVALID: [^\n]*thymos\.toml[^\n]*lifecycle\.threshold_active[^\n]*\n$/);

    const down = thymos('down');
    assert.equal(down.status, 0, down.stderr);
    await eventually(() => (existsSync(join(project, 'data', 'pm2', 'pm2.pid')) ? undefined : true), 20_000, 'the pm2 daemon gone');
  });

  test("the README's block for a project of its own is the commands run above, placeholders filled", () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const [, block] = /^### From the command line: your own project\n[\s\S]*?```sh\n([\s\S]*?)```/m.exec(readme) ?? [];
    assert.ok(block, 'the README has the block');
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(basename(tarball), `thymos-${version}.tgz`, 'npm pack makes the file the README names');
    const commands = block
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter(Boolean)
      // The placeholders: the packed tarball, and sudo, which this machine's nats-server makes needless.
      .map((c) => c.replace(`/path/to/thymos-${version}.tgz`, tarball).replace(/^sudo /, ''));
    assert.ok(commands.length >= 12, `the block has the whole flow (${commands.length} commands)`);
    // A command run with more options than the README shows (`logs --all -n 5`) counts as run.
    assert.deepEqual(
      commands.filter((c) => !ran.some((r) => r === c || r.startsWith(`${c} `))),
      [],
    );
  });
});
