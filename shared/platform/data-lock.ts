import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { ErrorCode, ThymosError } from '../errors/errors.js';

/** What a lock guards, for its file name and its refusal. */
export interface DataLockOwner {
  /** File created in the directory, e.g. `agent.pid`. */
  file: string;
  /** Named in the refusal, e.g. `agent elder_rowan`. */
  name: string;
  /** Code of the refusal. */
  code: typeof ErrorCode.AGENT_ALREADY_RUNNING | typeof ErrorCode.SUPERVISOR_ALREADY_RUNNING;
}

/**
 * An exclusive, PID-stamped lock on a data directory (an agent's, or a fleet's for its
 * supervisor), taken before the database is opened. SurrealDB's own surrealkv lock makes a second opener hang
 * forever without an error, so this lock is what turns "two live copies of one
 * agent" into a prompt, clear refusal. A lock left by a dead process is taken over.
 */
export class DataLock {
  readonly #path: string;
  #held = false;

  private constructor(path: string) {
    this.#path = path;
  }

  /** Takes the lock in `dir` or throws the owner's code naming the holder's pid. */
  static acquire(dir: string, owner: DataLockOwner): DataLock {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      const why =
        (err as NodeJS.ErrnoException).code === 'EEXIST' || (err as NodeJS.ErrnoException).code === 'ENOTDIR'
          ? 'a file stands where the directory should be'
          : (err as Error).message;
      throw new ThymosError(
        ErrorCode.DATABASE_ERROR,
        `cannot create the data directory ${dir} of ${owner.name}: ${why}; expected a writable directory`,
        { cause: err },
      );
    }
    const lock = new DataLock(join(dir, owner.file));
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(lock.#path, 'wx', 0o644);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        lock.#held = true;
        return lock;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new ThymosError(ErrorCode.DATABASE_ERROR, `cannot create lock file ${lock.#path}: ${(err as Error).message}`, {
            cause: err,
          });
        }
      }
      const holder = readLockPid(lock.#path);
      if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
        throw new ThymosError(
          owner.code,
          `${owner.name} is already running (pid ${holder} holds ${lock.#path}); refusing to start a second copy`,
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
    throw new ThymosError(owner.code, `${owner.name}: could not take ${lock.#path} (contended)`);
  }

  get path(): string {
    return this.#path;
  }

  /** Releases the lock if this process still holds it. Safe to call twice. */
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    if (readLockPid(this.#path) === process.pid) {
      try {
        unlinkSync(this.#path);
      } catch {
        // Already gone.
      }
    }
  }
}

/** The pid written in a lock file, if it holds a valid one. */
export function readLockPid(path: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a process with this pid exists and has not exited (EPERM means it exists,
 * owned by someone else). A zombie — exited, not yet reaped, as under a container init
 * that does not reap — counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S …"; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (not Linux): trust kill(0)
  }
}
