import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { killFleet } from './helpers/fleet.js';
import { createWorkspace, REPO_ROOT } from './helpers/workspace.js';

async function runExample(file: string, args: string[] = []): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, file), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, out);
  return out;
}

test('the village game loop walks the player through Ashford, passes its own checks and stops its fleet', async () => {
  // Its own data directory, so a fleet a developer runs in examples/village is not touched.
  const ws = createWorkspace({ extra: '[lifecycle]\nmin_dwell_ms = 0' });
  try {
    const out = await runExample('examples/village/game-loop.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.doesNotMatch(out, /FAIL/);
    assert.match(out, /tick 6: the player is at village_square/);
  } finally {
    await killFleet(join(ws.dir, 'data'));
    ws.dispose();
  }
});

test('meet-the-elder runs one agent by hand and passes its own checks', async () => {
  const out = await runExample('examples/village/meet-the-elder.ts');
  assert.match(out, /all checks passed/);
  assert.doesNotMatch(out, /FAIL/);
});
