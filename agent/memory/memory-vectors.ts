import PQueue from 'p-queue';

import { dot, type Embedder, type Logger, withDeadline } from '../../shared/platform/index.js';
import type { MemoryRecord } from './memory-record.js';
import type { MemoryStore } from './memory-store.js';
import { VectorIndex } from './vector-index.js';

/** The query's vector and the cosine to it of each memory asked about (those with a vector). */
export interface QueryCosines {
  query: Float32Array;
  cosines: Map<string, number>;
}

/** Memories written within this window are embedded together. */
const EMBED_COALESCE_MS = 50;

/**
 * The vectors of an agent's memories for one embedder: stored vectors of its model are loaded,
 * and vectors are made after a write is acknowledged — memories written within
 * EMBED_COALESCE_MS go to the embedder in one request and their vectors into the database in
 * one write, one run at a time. A write never waits for the embedder; a vector or hybrid
 * recall runs what is pending first (`flush`), so a fresh memory is found by meaning.
 */
export class MemoryVectors {
  readonly index: VectorIndex;
  readonly #embedder: Embedder;
  readonly #store: MemoryStore;
  readonly #logger: Logger | undefined;
  readonly #queue = new PQueue({ concurrency: 1 });
  #pending: MemoryRecord[] = [];
  #timer: NodeJS.Timeout | undefined;
  #warnedMeaning = false;

  private constructor(embedder: Embedder, store: MemoryStore, logger: Logger | undefined) {
    this.index = new VectorIndex(embedder.dims);
    this.#embedder = embedder;
    this.#store = store;
    this.#logger = logger;
  }

  /** Loads the stored vectors of `records` made by `embedder`'s model, and schedules the missing ones. */
  static async attach(
    embedder: Embedder,
    store: MemoryStore,
    records: ReadonlyMap<string, MemoryRecord>,
    logger: Logger | undefined,
  ): Promise<MemoryVectors> {
    const vectors = new MemoryVectors(embedder, store, logger);
    for (const [id, v] of await store.embeddings(embedder.model))
      if (records.has(id) && v.length === embedder.dims) vectors.index.set(id, v);
    const missing = [...records.values()].filter((r) => !vectors.index.has(r.id));
    if (missing.length > 0) vectors.embedSoon(missing);
    return vectors;
  }

  /** The vector of a query; throws what the embedder throws. */
  async query(text: string): Promise<Float32Array | undefined> {
    return (await this.#embedder.embed([text]))[0];
  }

  /**
   * Cosines of `records` to `query` for ranking within one recall: the query and any record
   * not embedded yet are asked for in one request (those vectors are not kept: the background
   * run stores them), so the ranking does not depend on how far that run has got. Returns the
   * query's vector with them, for the rest of the recall. Throws what the embedder throws.
   */
  async cosines(query: string, records: readonly MemoryRecord[]): Promise<QueryCosines | undefined> {
    const missing = records.filter((r) => !this.index.has(r.id));
    const [q, ...made] = await this.#embedder.embed([query, ...missing.map((r) => r.content)]);
    if (!q) return undefined;
    const cosines = new Map<string, number>();
    missing.forEach((r, i) => cosines.set(r.id, dot(q, made[i]!)));
    for (const r of records) {
      const c = this.index.cosine(q, r.id);
      if (c !== undefined) cosines.set(r.id, c);
    }
    return { query: q, cosines };
  }

  /**
   * `cosines` within `waitMs`, for a recall that must not wait on the embedder: undefined when
   * the answer comes later or the embedder fails (either logged once).
   */
  async cosinesWithin(query: string, records: readonly MemoryRecord[], waitMs: number): Promise<QueryCosines | undefined> {
    const asked = this.cosines(query, records);
    const skip = (why: Record<string, unknown>, message: string) => {
      if (!this.#warnedMeaning) this.#logger?.warn(why, message);
      this.#warnedMeaning = true;
      return undefined;
    };
    try {
      return await withDeadline(asked, waitMs, () => {
        asked.catch(() => undefined);
        return skip({ wait_ms: waitMs }, 'recall ranked without meaning: the query vector came later than [memory] semantic_wait_ms');
      });
    } catch (err) {
      return skip({ err: (err as Error).message }, 'recall ranked without meaning: the embedder failed');
    }
  }

  /**
   * The vectors of `records` the embedder has at hand without asking (`Embedder.known`), for
   * the memories' own write; call `adopt` once it is stored, and `embedSoon` for the others.
   */
  known(records: readonly MemoryRecord[]): { model: string; byId: Map<string, Float32Array> } | undefined {
    if (!this.#embedder.known) return undefined;
    const byId = new Map<string, Float32Array>();
    for (const r of records) {
      const v = this.#embedder.known(r.content);
      if (v) byId.set(r.id, v);
    }
    return byId.size > 0 ? { model: this.#embedder.model, byId } : undefined;
  }

  /** Indexes vectors stored with their memories (see `known`). */
  adopt(byId: ReadonlyMap<string, Float32Array>): void {
    for (const [id, v] of byId) this.index.set(id, v);
  }

  /** Queues memories to embed in the next coalesced run. */
  embedSoon(records: MemoryRecord[]): void {
    if (records.length === 0) return;
    this.#pending.push(...records);
    if (this.#timer) return;
    this.#timer = setTimeout(() => void this.flush(), EMBED_COALESCE_MS);
    this.#timer.unref();
  }

  /** Embeds what is pending now; resolves when every embedding run so far has finished. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length > 0) {
      const batch = this.#pending.splice(0);
      void this.#queue.add(async () => {
        for (let i = 0; i < batch.length; i += 256) {
          const vectors = await this.#embed(batch.slice(i, i + 256));
          if (!vectors) continue;
          await this.#store
            .setEmbeddings(this.#embedder.model, vectors)
            .catch((err: unknown) => this.#logger?.warn({ err: (err as Error).message }, 'vectors not stored'));
          for (const [id, v] of vectors) this.index.set(id, v);
        }
      });
    }
    return this.#queue.onIdle();
  }

  /** Vectors of the memories' contents, or undefined when the embedder failed (logged; recall uses BM25 for them). */
  async #embed(records: readonly MemoryRecord[]): Promise<Map<string, Float32Array> | undefined> {
    if (records.length === 0) return undefined;
    try {
      const vectors = await this.#embedder.embed(records.map((r) => r.content));
      return new Map(records.map((r, i) => [r.id, vectors[i]!]));
    } catch (err) {
      this.#logger?.warn({ err: (err as Error).message, memories: records.length }, 'memories stored without vectors: the embedder failed');
      return undefined;
    }
  }
}
