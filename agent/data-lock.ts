import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, ThymosError } from '../shared/errors.js';

/**
 * An exclusive, PID-stamped lock on an agent's data directory, taken before the
 * database is opened. SurrealDB's own surrealkv lock makes a second opener hang
 * forever without an error, so this lock is what turns "two live copies of one
 * agent" into a prompt, clear refusal. A lock left by a dead process is taken over.
 */
export class DataLock {
  readonly #path: string;
  #held = false;

  private constructor(path: string) {
    this.#path = path;
  }

  /** Takes the lock in `dir` or throws AGENT_ALREADY_RUNNING naming the holder's pid. */
  static acquire(dir: string, agentId: string): DataLock {
    mkdirSync(dir, { recursive: true });
    const lock = new DataLock(join(dir, 'agent.pid'));
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(lock.#path, 'wx', 0o644);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        lock.#held = true;
        return lock;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new ThymosError(ErrorCode.DATABASE_ERROR, `cannot create lock file ${lock.#path}: ${(err as Error).message}`, { cause: err });
        }
      }
      const holder = readPid(lock.#path);
      if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
        throw new ThymosError(
          ErrorCode.AGENT_ALREADY_RUNNING,
          `agent ${agentId} is already running (pid ${holder} holds ${lock.#path}); refusing to start a second copy`,
          { details: { pid: holder, lock: lock.#path } },
        );
      }
      // Stale (holder dead, or the file is empty because its writer died mid-write): remove and retry.
      try {
        unlinkSync(lock.#path);
      } catch {
        // Another starter removed it first; the next attempt decides.
      }
    }
    throw new ThymosError(ErrorCode.AGENT_ALREADY_RUNNING, `agent ${agentId}: could not take ${lock.#path} (contended)`);
  }

  get path(): string {
    return this.#path;
  }

  /** Releases the lock if this process still holds it. Safe to call twice. */
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    if (readPid(this.#path) === process.pid) {
      try {
        unlinkSync(this.#path);
      } catch {
        // Already gone.
      }
    }
  }
}

function readPid(path: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
