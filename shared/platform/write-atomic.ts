import { renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * Writes `text` to `file` through a temporary file and a rename: a crash leaves the old file or
 * the new one, never half of one. `mode` (e.g. 0o600 for a secret) is the file's from its creation on.
 */
export function writeAtomic(file: string, text: string, mode?: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  writeFileSync(tmp, text, mode === undefined ? undefined : { mode });
  renameSync(tmp, file);
}
