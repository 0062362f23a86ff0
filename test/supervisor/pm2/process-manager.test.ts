import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { isAlive, readLockPid } from '../../../shared/platform/data-lock.js';
import { type AppExit, ProcessManager } from '../../../supervisor/pm2/process-manager.js';

/** Resolves with the first exit `pick` accepts, or rejects after `ms`. */
function nextExit(pm: ProcessManager, pick: (e: AppExit) => boolean, ms: number): Promise<AppExit> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no exit within ${ms} ms`)), ms);
    void pm.watchExits((e) => {
      if (!pick(e)) return;
      clearTimeout(timer);
      resolve(e);
    });
  });
}

test('pm2 pushes each exit of an app to its watchers, with the exit code, and stops pushing once unwatched', async () => {
  const home = mkdtempSync(join(tmpdir(), 'thymos-pm2-'));
  writeFileSync(join(home, 'quits.cjs'), 'process.exit(0);');
  writeFileSync(join(home, 'crashes.cjs'), 'process.exit(3);');
  const pm = await ProcessManager.connect(home);
  try {
    const seen: AppExit[] = [];
    const unwatch = await pm.watchExits((e) => seen.push(e));
    const exited = nextExit(pm, (e) => e.name === 'quits', 20_000);
    await pm.start({
      name: 'quits',
      script: join(home, 'quits.cjs'),
      args: [],
      interpreter: process.execPath,
      nodeArgs: [],
      killTimeoutMs: 1000,
      autorestart: false,
      logFile: join(home, 'quits.log'),
    });
    const exit = await exited;
    assert.equal(exit.name, 'quits');
    assert.equal(exit.exitCode, 0);
    assert.ok(
      seen.some((e) => e.name === 'quits'),
      'the first watcher saw it too',
    );

    unwatch();
    const before = seen.length;
    const crashed = nextExit(pm, (e) => e.name === 'crashes', 20_000);
    await pm.start({
      name: 'crashes',
      script: join(home, 'crashes.cjs'),
      args: [],
      interpreter: process.execPath,
      nodeArgs: [],
      killTimeoutMs: 1000,
      autorestart: false,
      logFile: join(home, 'crashes.log'),
    });
    const crash = await crashed;
    assert.equal(crash.exitCode, 3);
    assert.equal(seen.length, before, 'an unwatched listener hears nothing more');
  } finally {
    const daemon = readLockPid(join(home, 'pm2.pid'));
    await pm.killDaemon();
    assert.ok(daemon === undefined || !isAlive(daemon), 'the daemon is gone');
    rmSync(home, { recursive: true, force: true });
  }
});
