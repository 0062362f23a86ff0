import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

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

/**
 * CPU seconds a process and all its descendants have used, those that exited included (their
 * time is in their parent's `cutime`/`cstime` once it has reaped them): the CPU of everything a
 * daemon runs. Read from /proc (Linux); 0 for a process that is gone.
 */
export function treeCpuSeconds(root: number): number {
  const stats = new Map<number, { ppid: number; cpu: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(entry), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100 });
    } catch {
      // Gone between the listing and the read: its time is in its parent's now.
    }
  }
  const children = new Map<number, number[]>();
  for (const [pid, s] of stats) (children.get(s.ppid) ?? children.set(s.ppid, []).get(s.ppid)!).push(pid);
  let sum = 0;
  const walk = [root];
  while (walk.length > 0) {
    const pid = walk.pop()!;
    sum += stats.get(pid)?.cpu ?? 0;
    walk.push(...(children.get(pid) ?? []));
  }
  return sum;
}
