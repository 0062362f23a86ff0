import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times: USER_HZ, 100 on every Linux Node runs on. */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a process has used, from /proc (Linux); undefined where it cannot be read. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * A process's proportional set size (its private pages plus its share of pages it shares, the
 * per-process cost of a fleet of Node processes) and resident set size, in bytes, from
 * /proc/<pid>/smaps_rollup (Linux); undefined where it cannot be read.
 */
export function memoryBytes(pid: number): { pss: number; rss: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024;
    const usage = { pss: field('Pss'), rss: field('Rss') };
    return Number.isNaN(usage.pss) || Number.isNaN(usage.rss) ? undefined : usage;
  } catch {
    return undefined;
  }
}
