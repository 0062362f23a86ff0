import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT } from './helpers/workspace.js';

test('the village example runs and passes its own checks', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'examples/village/meet-the-elder.ts')], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, out);
  assert.match(out, /all checks passed/);
  assert.doesNotMatch(out, /FAIL/);
});
