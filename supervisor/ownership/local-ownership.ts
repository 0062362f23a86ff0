import { ErrorCode } from '../../shared/errors/index.js';
import { DataLock } from '../../shared/platform/index.js';
import type { AgentOwnership } from './agent-ownership.js';

/**
 * Ownership on one host: the fleet's data lock (`supervisor.pid`) makes this supervisor the only one
 * of its data directory, so every claim is granted. Tokens are the clock in microseconds, one apart at
 * least, so a supervisor started later issues greater tokens than one before it on the same host.
 */
export class LocalOwnership implements AgentOwnership {
  readonly #lock: DataLock;
  readonly #held = new Map<string, number>();
  #last = 0;

  private constructor(lock: DataLock) {
    this.#lock = lock;
  }

  /** Takes the fleet's data lock, or throws `SUPERVISOR_ALREADY_RUNNING` naming the live supervisor that holds it. */
  static open(dataDir: string): LocalOwnership {
    return new LocalOwnership(
      DataLock.acquire(dataDir, {
        file: 'supervisor.pid',
        name: `the supervisor of ${dataDir}`,
        code: ErrorCode.SUPERVISOR_ALREADY_RUNNING,
      }),
    );
  }

  claim(id: string): Promise<number> {
    const held = this.#held.get(id);
    if (held !== undefined) return Promise.resolve(held);
    this.#last = Math.max(this.#last + 1, Math.floor((performance.timeOrigin + performance.now()) * 1000));
    this.#held.set(id, this.#last);
    return Promise.resolve(this.#last);
  }

  /** The data lock does not lapse: claims have no deadline. */
  readonly deadline = undefined;

  /** The data lock does not lapse: nothing to renew. */
  renew(): Promise<void> {
    return Promise.resolve();
  }

  release(id: string): Promise<void> {
    this.#held.delete(id);
    return Promise.resolve();
  }

  /** Claims here never take one over from an earlier run. */
  succeeded(): number | undefined {
    return undefined;
  }

  holds(id: string): number | undefined {
    return this.#held.get(id);
  }

  close(): Promise<void> {
    this.#held.clear();
    this.#lock.release();
    return Promise.resolve();
  }
}
