import PQueue from 'p-queue';

import type { Logger } from '../../shared/platform/index.js';
import type { MemoryRecord } from './memory-record.js';

export type MemoryEvent = 'created' | 'updated' | 'accessed';

/** Called after memories were stored (`created`), changed by a consolidation (`updated`) or returned by a reinforcing recall (`accessed`). */
export type MemoryHook = (records: readonly MemoryRecord[]) => Promise<void> | void;

/**
 * What runs after the memory changed, off the caller's path: the hooks of each event and the
 * background jobs that must not interleave with them, one at a time and in order; a failure is
 * logged, never the caller's error.
 */
export class MemoryHooks {
  readonly #hooks: Record<MemoryEvent, MemoryHook[]> = { created: [], updated: [], accessed: [] };
  readonly #queue = new PQueue({ concurrency: 1 });
  readonly #logger: Logger | undefined;

  constructor(logger: Logger | undefined) {
    this.#logger = logger;
  }

  on(event: MemoryEvent, hook: MemoryHook): void {
    this.#hooks[event].push(hook);
  }

  /** Runs `task` after the hooks queued so far. */
  schedule(task: () => Promise<void> | void, what: string): void {
    void this.#queue.add(async () => {
      try {
        await task();
      } catch (err) {
        this.#logger?.warn({ err: (err as Error).message }, `${what} failed`);
      }
    });
  }

  /** Queues the hooks of `event` for `records` (none for no records). */
  fire(event: MemoryEvent, records: readonly MemoryRecord[]): void {
    if (records.length === 0) return;
    for (const hook of this.#hooks[event]) this.schedule(() => hook(records), 'memory hook');
  }

  /** Resolves when every hook queued so far has run. */
  settle(): Promise<void> {
    return this.#queue.onIdle();
  }
}
