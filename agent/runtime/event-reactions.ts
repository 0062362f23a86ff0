import PQueue from 'p-queue';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { MemoryRecord } from '../memory/memory-record.js';

/** Reactions waiting beyond this are dropped (and logged): a burst of events must not queue model calls without end. */
const REACTION_BACKLOG = 32;

/**
 * Reasoning about heard events, one at a time and bounded: a reaction that finds the agent
 * no longer active, cancelled or stopping ends quietly; any other failure is logged.
 */
export class EventReactions {
  readonly #queue = new PQueue({ concurrency: 1 });
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Queues `react` for a heard memory, unless the backlog is full. */
  add(heard: MemoryRecord, react: () => Promise<void>): void {
    if (this.#queue.size >= REACTION_BACKLOG) {
      this.#logger.warn(
        { event: heard.source.event, backlog: this.#queue.size },
        'too many events waiting for a decision; this one is not reasoned about',
      );
      return;
    }
    void this.#queue.add(react).catch((err: unknown) => {
      const code = err instanceof ThymosError ? err.code : undefined;
      if (code === ErrorCode.CANCELLED || code === ErrorCode.AGENT_NOT_ACTIVE || code === ErrorCode.AGENT_STOPPING) return;
      this.#logger.warn({ err, event: heard.source.event }, 'reasoning about a heard event failed');
    });
  }

  /** Drops the reactions still waiting (a passivation or a stop). */
  clear(): void {
    this.#queue.clear();
  }
}
