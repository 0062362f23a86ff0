import { spawn } from 'node:child_process';

import { cpuSeconds as processCpuSeconds } from '../shared/platform/process-usage.js';

/** CPU seconds (user + system) a process has used. */
export function cpuSeconds(pid: number): number {
  return processCpuSeconds(pid) ?? 0;
}

/** A bare `node` spawned and exited, in ms: the floor any Node process start stands on. */
export async function bareNodeSpawnMs(node = process.execPath): Promise<number> {
  const t = performance.now();
  await new Promise((resolve) => spawn(node, ['-e', ''], { stdio: 'ignore' }).once('exit', resolve));
  return performance.now() - t;
}
