import { setTimeout as sleep } from 'node:timers/promises';

import type { Surreal } from 'surrealdb';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';

/** How often a write that lost a transaction conflict is tried again. */
const CONFLICT_RETRIES = 5;

/**
 * The queries of an agent's private database: a write that lost a transaction conflict is
 * tried again, and closing waits for the queries in flight (the engine panics on a connection
 * closed under a query) and refuses new ones.
 */
export class QueryRunner {
  readonly #db: Surreal;
  #closed = false;
  /** Queries sent and not yet answered: close waits for them. */
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(db: Surreal) {
    this.#db = db;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs a query. Two writes at once (a recall's reinforcement and a concept back-fill, say)
   * can conflict in surrealkv's optimistic transactions; the loser is rolled back whole and
   * SurrealDB says it "can be retried", so it is, a few times with a short growing pause.
   * Every write here is an upsert, a keyed insert or one transaction, so running it again
   * after a rollback writes it once.
   */
  async query<T extends unknown[] = unknown[]>(query: string, bindings?: Record<string, unknown>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      if (this.#closed) throw new ThymosError(ErrorCode.DATABASE_ERROR, 'the memory database is closed');
      try {
        const sent = this.#db.query(query, bindings);
        this.#inFlight.add(sent);
        try {
          return (await sent) as T;
        } finally {
          this.#inFlight.delete(sent);
        }
      } catch (err) {
        const message = (err as Error).message;
        if (attempt < CONFLICT_RETRIES && /transaction conflict|can be retried/i.test(message)) {
          await sleep(5 * 2 ** attempt + Math.random() * 5);
          continue;
        }
        throw new ThymosError(ErrorCode.DATABASE_ERROR, `memory database: ${message}`, { cause: err });
      }
    }
  }

  /** Refuses new queries, waits for those in flight, then closes the database. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    await this.#db.close();
  }
}
