import { renameSync, writeFileSync } from 'node:fs';

/** Writes `text` to `file` through a temporary file and a rename: a crash leaves the old file or the new one, never half of one. */
export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}
