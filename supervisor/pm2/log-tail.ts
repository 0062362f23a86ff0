import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** How much of a log's end is read for an error message. */
const TAIL_BYTES = 64 * 1024;

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return -1;
  }
}

/** The size of a log now (0 when it does not exist yet), to read what a start writes from there on. */
export function logOffset(file: string): number {
  return Math.max(0, sizeOf(file));
}

/**
 * What a process that just exited wrote to its log after `from` (at most its last 64 KiB):
 * pm2 may still be writing the last lines when it reports the exit, so the file is read once it
 * stops growing (after at most 1 s). Only a failed start waits here.
 */
export async function settledLog(file: string, from = 0): Promise<string> {
  const deadline = performance.now() + 1000;
  let last = sizeOf(file);
  for (;;) {
    await sleep(50);
    const now = sizeOf(file);
    if (now === last || performance.now() > deadline) break;
    last = now;
  }
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const end = statSync(file).size;
    const start = Math.max(from, end - TAIL_BYTES);
    const buffer = Buffer.alloc(Math.max(0, end - start));
    const read = readSync(fd, buffer, 0, buffer.length, start);
    return buffer.subarray(0, read).toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
