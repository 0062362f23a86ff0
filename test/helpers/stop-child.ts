import type { ChildProcess } from 'node:child_process';

import { withDeadline } from '../../shared/platform/deadline.js';

/**
 * Stops `child` by pid with `signal`, then with SIGKILL if it has not exited within `ms`, and
 * resolves once it exited. A child that is not running is left as it is.
 */
export async function stopChild(child: ChildProcess | undefined, ms: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  const inTime = await withDeadline(
    exited.then(() => true),
    ms,
    () => false,
  );
  if (!inTime) {
    child.kill('SIGKILL');
    await exited;
  }
}
