import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Writes `text` to `file` through a temporary file and a rename: a crash leaves the old file or
 * the new one, never half of one (the file and its folder are flushed to disk around the rename).
 * `mode` (e.g. 0o600 for a secret) is the file's from its creation on; the temporary file is made
 * new (never through a link left at its name) and removed if the write fails.
 */
export function writeAtomic(file: string, text: string, mode?: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, 'wx', mode ?? 0o666);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, file);
  try {
    const dir = openSync(dirname(file), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  } catch {
    // A folder that cannot be opened for a flush (some filesystems): the rename still stands.
  }
}
