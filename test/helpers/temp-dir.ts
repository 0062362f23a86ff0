import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Process-wide on purpose: the folders are removed as the process exits, and one exit
// listener removes them all.
const made: string[] = [];

/**
 * A new folder under the system temp folder, `prefix` followed by six random characters,
 * removed when the process exits. node:test runs each test file in a process of its own, so
 * the folder lasts through every hook of the file: a nats-server restarted on its JetStream
 * storage or a pm2 daemon with its home there is stopped by the file's own after-hooks first.
 *
 * @example
 * const dir = tempDir('thymos-pkl-');
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  if (made.length === 1) process.once('exit', removeAll);
  return dir;
}

function removeAll(): void {
  for (const dir of made) {
    try {
      // An embedded SurrealDB may still be finishing a file as the process ends: tried again briefly.
      rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    } catch {
      // Left behind: the exit does not fail for a temp folder.
    }
  }
}
