import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { eventually } from '../../helpers/fleet.js';
import { memoryToolCaller } from '../../helpers/tool-caller.js';

const dir = mkdtempSync(join(tmpdir(), 'thymos-subprocess-'));
const SECRET = 'gh-5ecret-t0ken-of-the-deploy-service';

/** Prints what it was given: its arguments, its environment, its standard input, its folder. */
writeFileSync(
  join(dir, 'show.mjs'),
  `let stdin = '';
if (process.argv.includes('--read-stdin')) for await (const chunk of process.stdin) stdin += chunk;
process.stdout.write(JSON.stringify({ argv: process.argv.slice(2), env: process.env, stdin, cwd: process.cwd() }) + '\\n');
`,
);
/** Starts a grandchild that ignores SIGTERM (in its own group), writes both pids, then waits or exits. */
writeFileSync(
  join(dir, 'family.mjs'),
  `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const grandchild = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: 'ignore' });
writeFileSync(process.argv[2], JSON.stringify({ child: process.pid, grandchild: grandchild.pid }));
if (process.argv[3] === 'exit') process.exit(0);
setInterval(() => {}, 1000);
`,
);
writeFileSync(
  join(dir, 'fail.mjs'),
  `process.stderr.write('x'.repeat(9000) + '\\nthe token ' + process.env.TOKEN + ' was refused\\n'); process.exit(3);\n`,
);
/** A grandchild in a session of its own that keeps the program's output open after the program exits. */
writeFileSync(
  join(dir, 'escape.mjs'),
  `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const g = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
writeFileSync(process.argv[2], String(g.pid));
g.unref();
process.stdout.write('left one behind');
`,
);
/** A secret written to stderr many times on one line, so the kept tail starts inside one. */
writeFileSync(join(dir, 'spill.mjs'), `process.stderr.write((process.env.TOKEN + ' ').repeat(400)); process.exit(1);\n`);
writeFileSync(join(dir, 'flood.mjs'), `process.stdout.write('y'.repeat(100000));\n`);

const node = process.execPath;
const TOOLS = {
  show: {
    description: 'Shows its arguments',
    input: {
      name: {},
      files: { list: true, required: false },
      count: { type: 'integer', required: false },
      offset: { type: 'integer', required: false },
    },
    output: { argv: { list: true }, stdin: {}, cwd: {} },
    sideEffect: 'writes_external',
    executor: {
      kind: 'subprocess',
      command: node,
      args: ['show.mjs', '--name', '{name}', '{files}', { field: 'count', option: '--count' }, { field: 'offset', allowDash: true }],
    },
  },
  show_env: {
    description: 'Shows its environment and standard input',
    input: { text: {}, hidden: { required: false } },
    sideEffect: 'read_only',
    executor: {
      kind: 'subprocess',
      command: 'node',
      args: ['show.mjs', '--read-stdin'],
      env: ['PATH', 'HOME'],
      secrets: { GH_TOKEN: { env: 'DEPLOY_TOKEN' } },
      stdin: ['text'],
    },
  },
  family: {
    description: 'Starts a family of processes',
    input: { file: {}, how: {} },
    sideEffect: 'read_only',
    timeoutMs: 500,
    executor: { kind: 'subprocess', command: node, args: ['family.mjs', '{file}', '{how}'] },
  },
  fail: {
    description: 'Fails loudly',
    sideEffect: 'read_only',
    executor: { kind: 'subprocess', command: node, args: ['fail.mjs'], secrets: { TOKEN: { env: 'DEPLOY_TOKEN' } } },
  },
  flood: {
    description: 'Writes too much',
    sideEffect: 'read_only',
    outputLimitBytes: 1000,
    executor: { kind: 'subprocess', command: node, args: ['flood.mjs'] },
  },
  escape: {
    description: 'Leaves a grandchild holding its output',
    input: { file: {} },
    sideEffect: 'read_only',
    timeoutMs: 8000,
    executor: { kind: 'subprocess', command: node, args: ['escape.mjs', '{file}'] },
  },
  spill: {
    description: 'Spills a secret',
    sideEffect: 'read_only',
    executor: { kind: 'subprocess', command: node, args: ['spill.mjs'], secrets: { TOKEN: { env: 'DEPLOY_TOKEN' } } },
  },
  missing: {
    description: 'A program nowhere',
    sideEffect: 'read_only',
    executor: { kind: 'subprocess', command: 'thymos-no-such-program' },
  },
};

const agentEnv = { PATH: process.env.PATH, HOME: '/home/desk', LEAKY: 'not for programs', DEPLOY_TOKEN: SECRET };

/** Whether a process is running (a zombie waiting for its parent is not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('the Subprocess executor, with real processes', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("input fills whole arguments (a list one per value, an absent field none); the program runs in the schema file's folder", async () => {
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    const r = await tools.call(
      'show',
      { name: 'a b; rm -rf ~', files: ['x.txt', 'y z.txt'], offset: -5, reason: 'test' },
      { caller: 'test' },
    );
    assert.equal(r.status, 'ok', JSON.stringify(r.error));
    const out = r.result as { argv: string[]; cwd: string };
    assert.deepEqual(out.argv, ['--name', 'a b; rm -rf ~', 'x.txt', 'y z.txt', '-5'], 'an absent optional field takes its option with it');
    assert.equal(out.cwd, dir);
    const counted = await tools.call('show', { name: 'n', count: 3, reason: 'test' }, { caller: 'test' });
    assert.deepEqual((counted.result as { argv: string[] }).argv, ['--name', 'n', '--count', '3']);
  });

  test('a value starting with "-" is refused before anything is saved or run, unless its argument allows it', async () => {
    const { tools, rows } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    await assert.rejects(
      tools.call('show', { name: '--output=/etc/passwd', reason: 'test' }, { caller: 'test' }),
      (err: { code: string; message: string; location?: { path?: string } }) => {
        assert.equal(err.code, 'INVALID_INPUT');
        assert.equal(err.location?.path, 'arguments.name');
        assert.match(err.message, /starts with "-".*allowDash/);
        return true;
      },
    );
    await assert.rejects(
      tools.call('show', { name: 'ok', files: ['fine', '-rf'], reason: 'test' }, { caller: 'test' }),
      /arguments of show: files/,
    );
    await assert.rejects(tools.call('show', { name: 'nul\0byte', reason: 'test' }, { caller: 'test' }), /NUL/);
    assert.equal(rows.size, 0, 'nothing was saved, so nothing ran');
  });

  test("only the variables on the allowlist, the secrets and the call's own reach the program; secrets never reach the record", async () => {
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    const r = await tools.call('show_env', { text: 'hello', hidden: 'not sent' }, { caller: 'test' });
    assert.equal(r.status, 'ok', JSON.stringify(r.error));
    const out = JSON.parse(r.result as string) as { env: Record<string, string>; stdin: string };
    // Node itself hands NODE_V8_COVERAGE to every child it starts while coverage is collected (CI): that is not the agent's environment.
    const seen = Object.keys(out.env).filter((k) => k !== 'NODE_V8_COVERAGE' || !process.env.NODE_V8_COVERAGE);
    assert.deepEqual(seen.sort(), ['GH_TOKEN', 'HOME', 'PATH', 'THYMOS_AGENT', 'THYMOS_CALL_ID', 'THYMOS_IDEMPOTENCY_KEY', 'THYMOS_TOOL']);
    assert.equal(out.env.LEAKY, undefined, 'a variable outside the allowlist is absent');
    assert.equal(out.env.HOME, '/home/desk');
    assert.equal(out.env.GH_TOKEN, '[secret DEPLOY_TOKEN]', 'the secret reached the program, and is taken out of the result');
    assert.equal(out.env.THYMOS_IDEMPOTENCY_KEY, r.idempotency_key);
    assert.equal(out.env.THYMOS_CALL_ID, r.call_id);
    assert.deepEqual(JSON.parse(out.stdin), { text: 'hello' }, 'standard input carries the fields stdin names');
  });

  test('at the timeout the whole process group is killed: the program and a grandchild that ignores SIGTERM', async () => {
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    const pids = join(dir, 'timeout-pids.json');
    const r = await tools.call('family', { file: pids, how: 'wait' }, { caller: 'test' });
    assert.equal(r.error?.code, 'TOOL_TIMEOUT', JSON.stringify(r));
    const { child, grandchild } = JSON.parse(readFileSync(pids, 'utf8')) as { child: number; grandchild: number };
    await eventually(() => !alive(child) && !alive(grandchild), 10_000, 'the program and its grandchild gone');
  });

  test('a program that exits leaves nothing running behind it', async () => {
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    const pids = join(dir, 'exit-pids.json');
    const r = await tools.call('family', { file: pids, how: 'exit' }, { caller: 'test' });
    assert.equal(r.status, 'ok', JSON.stringify(r.error));
    const { grandchild } = JSON.parse(readFileSync(pids, 'utf8')) as { grandchild: number };
    await eventually(() => !alive(grandchild), 10_000, 'the grandchild gone');
  });

  test('a grandchild in a session of its own that holds the output open does not hold the call', async () => {
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    const pidFile = join(dir, 'escaped.pid');
    const r = await tools.call('escape', { file: pidFile }, { caller: 'test' });
    const escaped = Number(readFileSync(pidFile, 'utf8'));
    try {
      assert.equal(r.status, 'ok', JSON.stringify(r.error));
      assert.equal(r.result, 'left one behind');
    } finally {
      process.kill(escaped, 'SIGKILL');
    }
  });

  test('a secret cut by the end kept of stderr is not quoted in part', async () => {
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    const r = await tools.call('spill', {}, { caller: 'test' });
    assert.equal(r.error?.code, 'TOOL_FAILED');
    const text = JSON.stringify(r);
    for (let i = 0; i + 8 <= SECRET.length; i++)
      assert.ok(!text.includes(SECRET.slice(i, i + 8)), `no 8 characters of the secret (${SECRET.slice(i, i + 8)})`);
    assert.match(r.error!.message, /\[secret DEPLOY_TOKEN\]/);
  });

  test('a non-zero exit is TOOL_FAILED with the code and the end of stderr, secrets removed; too much output and a missing program are coded', async () => {
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { env: agentEnv } });
    const failed = await tools.call('fail', {}, { caller: 'test' });
    assert.equal(failed.error?.code, 'TOOL_FAILED');
    assert.equal((failed.error?.details as { exit_code: number }).exit_code, 3);
    // The 9,000 x's are more than is kept, so their cut line goes; the line after them is quoted whole.
    assert.match(failed.error!.message, /exited with code 3: the token \[secret DEPLOY_TOKEN\] was refused$/);
    assert.ok(!JSON.stringify(failed).includes(SECRET));
    assert.ok(failed.error!.message.length < 1000, 'only the end of stderr');
    const flood = await tools.call('flood', {}, { caller: 'test' });
    assert.equal(flood.error?.code, 'TOOL_OUTPUT_TOO_LARGE');
    const missing = await tools.call('missing', {}, { caller: 'test' });
    assert.equal(missing.error?.code, 'TOOL_FAILED');
    assert.match(missing.error!.message, /no program "thymos-no-such-program" on the agent's PATH/);
    assert.equal(existsSync(join(dir, 'nothing')), false);
  });
});
