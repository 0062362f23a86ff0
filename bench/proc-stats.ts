import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** CPU seconds (user + system) a process has used. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** A bare `node` spawned and exited, in ms: the floor any Node process start stands on. */
export async function bareNodeSpawnMs(): Promise<number> {
  const t = performance.now();
  await new Promise((resolve) => spawn(process.execPath, ['-e', ''], { stdio: 'ignore' }).once('exit', resolve));
  return performance.now() - t;
}
