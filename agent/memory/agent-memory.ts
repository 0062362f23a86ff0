import { type MemorySettings } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Embedder, Logger } from '../../shared/platform/index.js';
import { Bm25Index } from './bm25-index.js';
import { cascadeRecall, type CascadeSources, type CascadeStage } from './cascade-recall.js';
import { EpisodeIndex } from './episode-index.js';
import { fuseRankings, type Relevance } from './fused-ranking.js';
import { type MemoryEvent, type MemoryHook, MemoryHooks } from './memory-hooks.js';
import { type MemoryChanges, type MemoryRecord, recallFilter, type RecallHit } from './memory-record.js';
import type { ConceptWrite, MemoryStore } from './memory-store.js';
import { MemoryVectors } from './memory-vectors.js';
import { type NewMemory, newRecords } from './new-memory.js';
import { recallHits } from './recall-hits.js';
import type { RecallOptions } from './search-strategy.js';
import { ThreadTurns } from './thread-turns.js';

export type { NewMemory } from './new-memory.js';
export type { RecallOptions, SearchStrategy } from './search-strategy.js';

/** BM25 candidates re-ranked by strength; this many per requested result. */
const CANDIDATES_PER_RESULT = 4;
const MIN_CANDIDATES = 40;

/**
 * Finds, for new memories about to be written, the concepts that are at hand at once (they
 * came with a heard event), so they go into the memories' own transaction; `written` runs
 * once that transaction is stored.
 */
export interface ConceptCompanion {
  ready(records: readonly MemoryRecord[], at: number): ConceptCompanionWrite | undefined;
}

/** Concepts ready for new memories: stored with them, then `written`, or `failed` when their write failed. */
export interface ConceptCompanionWrite extends ConceptWrite {
  written(): void;
  failed(): void;
}

export interface AgentMemoryOptions {
  /** Makes vector and hybrid recall possible; without it they fall back to BM25. */
  embedder?: Embedder | undefined;
  logger?: Logger | undefined;
}

/**
 * An agent's memory: SurrealDB holds every record durably, an in-process BM25 index
 * answers queries, and a map keeps records for scoring. A write resolves once the database
 * has it and the index follows in the same call, except one given `storeWithinMs` (what an
 * agent hears live), which is recallable at once and stored within that time (`stored`).
 */
export class AgentMemory {
  readonly #store: MemoryStore;
  readonly #settings: MemorySettings;
  readonly #index = new Bm25Index();
  readonly #episodes = new EpisodeIndex();
  readonly #records = new Map<string, MemoryRecord>();
  #vectors: MemoryVectors | undefined;
  readonly #logger: Logger | undefined;
  #warnedFallback = false;
  readonly #hooks: MemoryHooks;
  #expandQuery: ((query: string) => string) | undefined;
  readonly #turns = new ThreadTurns();
  #concepts: ConceptCompanion | undefined;
  #causes: ((id: string, hops: number) => ReadonlyArray<{ memory: string; hops: number }>) | undefined;
  /** Who memories are by, lower-cased → as written: the names the cascade's structural stage looks for. */
  readonly #speakers = new Map<string, string>();

  private constructor(store: MemoryStore, settings: MemorySettings, options: AgentMemoryOptions) {
    this.#store = store;
    this.#settings = settings;
    this.#logger = options.logger;
    this.#hooks = new MemoryHooks(options.logger);
  }

  /**
   * Loads every memory from the store and builds the indexes. Stored vectors of the current
   * model are loaded; memories without one are embedded in the background (`vectorsReady`).
   */
  static async load(store: MemoryStore, settings: MemorySettings, options: AgentMemoryOptions = {}): Promise<AgentMemory> {
    const memory = new AgentMemory(store, settings, options);
    store.onLateWriteError((err, writes) =>
      options.logger?.warn({ err: (err as Error).message, writes }, 'storing heard memories failed; trying again'),
    );
    const rows = await store.all();
    rows.sort((a, b) => a.created_at - b.created_at);
    for (const row of rows) memory.#track(row);
    if (options.embedder) await memory.attachEmbedder(options.embedder);
    return memory;
  }

  /**
   * Turns on vector search with `embedder` (an agent does once the fleet's embedding service
   * answers): stored vectors of its model are loaded, missing ones made in the background.
   */
  async attachEmbedder(embedder: Embedder): Promise<void> {
    this.#vectors = await MemoryVectors.attach(embedder, this.#store, this.#records, this.#logger);
    this.#warnedFallback = false;
  }

  /**
   * Runs `hook` after every write (`created`), consolidation change (`updated`) or reinforcing
   * recall (`accessed`), off the caller's path, one at a time and in order; a failing hook is
   * logged, never the caller's error.
   */
  on(event: MemoryEvent, hook: MemoryHook): void {
    this.#hooks.on(event, hook);
  }

  /** Runs `task` in the hook queue, after the hooks queued so far (a background job that must not interleave with them). */
  schedule(task: () => Promise<void> | void, what = 'memory background task'): void {
    this.#hooks.schedule(task, what);
  }

  /** Resolves when every hook queued so far has run. */
  settle(): Promise<void> {
    return this.#hooks.settle();
  }

  /** Writes the concepts `companion` has ready for new memories in the memories' own transaction. */
  setConceptCompanion(companion: ConceptCompanion | undefined): void {
    this.#concepts = companion;
  }

  /** The causes of a memory (the concept tracker keeps `caused_by` links), for the cascade's causal stage. */
  setCauseWalker(causes: ((id: string, hops: number) => ReadonlyArray<{ memory: string; hops: number }>) | undefined): void {
    this.#causes = causes;
  }

  /** Rewrites a recall query before searching (alias resolution adds the names an alias stands for). */
  setQueryExpander(expand: ((query: string) => string) | undefined): void {
    this.#expandQuery = expand;
  }

  /** Resolves when every memory so far has its vector (or embedding them failed and was logged). */
  async vectorsReady(): Promise<void> {
    await this.#vectors?.flush();
  }

  /** Whether vector search is available. */
  get hasVectors(): boolean {
    return this.#vectors !== undefined;
  }

  get count(): number {
    return this.#records.size;
  }

  get(id: string): MemoryRecord | undefined {
    return this.#records.get(id);
  }

  /** Every stored memory, in no particular order. */
  all(): IterableIterator<MemoryRecord> {
    return this.#records.values();
  }

  async remember(input: NewMemory, now = Date.now()): Promise<MemoryRecord> {
    const [record] = await this.rememberMany([input], now);
    return record!;
  }

  /**
   * Stores several memories in one database write. Inputs whose `id` is already stored (or
   * repeated within the call) are not written again; the stored record is returned for them.
   */
  async rememberMany(inputs: readonly NewMemory[], now = Date.now(), storeWithinMs?: number): Promise<MemoryRecord[]> {
    return this.commit(inputs, [], now, storeWithinMs);
  }

  /** Resolves once every memory so far is in the database (those written with `storeWithinMs` wait for it). */
  stored(): Promise<void> {
    return this.#store.stored();
  }

  /**
   * Stores new memories and changes stored ones (lineage, importance) in one transaction:
   * what a consolidation writes. New inputs with a known id are kept as they are.
   * Changes to unknown memories are NOT_FOUND, and nothing is written.
   */
  async commit(
    inputs: readonly (NewMemory & { insight_key?: string })[],
    changes: ReadonlyArray<{ id: string; changes: MemoryChanges }>,
    now = Date.now(),
    storeWithinMs?: number,
  ): Promise<MemoryRecord[]> {
    for (const c of changes)
      if (!this.#records.has(c.id)) throw new ThymosError(ErrorCode.NOT_FOUND, `no memory ${JSON.stringify(c.id)} to change`);
    const { out, created } = newRecords(
      inputs,
      now,
      (id) => this.#records.get(id),
      (thread) => this.#records.get(this.#turns.last(thread) ?? '')?.created_at,
    );
    // What is at hand now (vectors and concepts that came with a heard event) goes in the same write.
    const vectors = this.#vectors?.known(created);
    const concepts = this.#concepts?.ready(created, now);
    try {
      if (storeWithinMs !== undefined && changes.length === 0) void this.#store.applySoon(created, { vectors, concepts }, storeWithinMs);
      else await this.#store.apply(created, changes, { vectors, concepts });
    } catch (err) {
      concepts?.failed();
      throw err;
    }
    for (const r of created) this.#track(r);
    const updated = changes.map((c) => {
      const record = { ...this.#records.get(c.id)!, ...c.changes };
      this.#records.set(c.id, record);
      return record;
    });
    concepts?.written();
    if (vectors) this.#vectors?.adopt(vectors.byId);
    this.#vectors?.embedSoon(vectors ? created.filter((r) => !vectors.byId.has(r.id)) : created);
    this.#hooks.fire('created', created);
    this.#hooks.fire('updated', updated);
    return out;
  }

  /**
   * The `k` memories that best match `query`: BM25 relevance (normalised to the best
   * match) times strength on the forgetting curve. Returned memories are reinforced.
   */
  async recall(rawQuery: string, options: RecallOptions): Promise<RecallHit[]> {
    const query = this.#expandQuery ? this.#expandQuery(rawQuery) : rawQuery;
    const now = options.now ?? Date.now();
    const keep = recallFilter((id) => this.#records.get(id), options);
    const pool = Math.max(MIN_CANDIDATES, options.k * CANDIDATES_PER_RESULT);
    const around = this.#turns.linked ? this.#turns.around : undefined;
    let strategy = options.strategy ?? this.#settings.search_strategy;
    let found: Array<Relevance & { stages?: CascadeStage[]; fuzzy?: boolean }>;
    if (strategy === 'cascade') {
      found = await cascadeRecall(query, this.#cascadeSources(around), { k: options.k, now, keep, pool, tuning: options.cascade });
    } else {
      let queryVector: Float32Array | undefined;
      if (strategy !== 'bm25') {
        queryVector = await this.#queryVector(query);
        if (!queryVector) strategy = 'bm25';
        else await this.#vectors?.flush();
      }
      const lexical = strategy === 'vector' ? [] : this.#index.search(query, pool, keep, around);
      const semantic = queryVector ? this.#vectors!.index.search(queryVector, pool, keep) : [];
      found = fuseRankings(
        strategy,
        lexical,
        semantic,
        options.semanticWeight ?? this.#settings.semantic_weight,
        this.#settings.rrf_k,
        queryVector !== undefined,
      );
    }
    const hits = recallHits(found, (id) => this.#records.get(id), strategy, now, this.#settings);
    const top = hits.slice(0, options.k);
    if (options.reinforce !== false && top.length > 0) {
      // Counted on the records as they are now: a recall that ran meanwhile has counted too.
      const reinforced = top.map((h) => {
        const current = this.#records.get(h.memory.id) ?? h.memory;
        return { ...current, access_count: current.access_count + 1, last_accessed: now };
      });
      for (const r of reinforced) this.#records.set(r.id, r);
      const written = this.#store.reinforce(reinforced, this.#settings.reinforce_write_ms);
      // Written behind, a failed write is tried again and reported by the store (onLateWriteError).
      if (this.#settings.reinforce_write_ms === 0) await written;
      this.#hooks.fire('accessed', reinforced);
    }
    return top;
  }

  /** The newest `limit` memories of a conversation thread, oldest first (walked back along the turn links). */
  threadTurns(thread: string, limit: number): MemoryRecord[] {
    const out: MemoryRecord[] = [];
    for (const id of this.#turns.newest(thread, limit)) {
      const m = this.#records.get(id);
      if (!m) break;
      out.push(m);
    }
    return out.reverse();
  }

  /** Keeps a stored memory in the map and the indexes: its words, its thread's links, its episode, its speaker. */
  #track(r: MemoryRecord): void {
    this.#records.set(r.id, r);
    this.#turns.add(r);
    this.#episodes.add(r, this.#index.add(r));
    this.#speakers.set(r.source.by.toLowerCase(), r.source.by);
  }

  /** What the cascade reads: the index, records, who they are by, and the causes the concept tracker keeps. */
  #cascadeSources(around: ((id: string) => readonly string[]) | undefined): CascadeSources {
    const vectors = this.#vectors;
    // The query's vector once ranking by meaning has it: filling after it asks for it no second time.
    let asked: { text: string; vector: Float32Array } | undefined;
    return {
      lexical: (q, limit, keep) => this.#index.match(q, limit, keep, around),
      meaning:
        vectors && this.#settings.semantic_wait_ms > 0
          ? async (q, ids) => {
              const got = await vectors.cosinesWithin(
                q,
                ids.flatMap((id) => this.#records.get(id) ?? []),
                this.#settings.semantic_wait_ms,
              );
              if (got) asked = { text: q, vector: got.query };
              return got?.cosines;
            }
          : undefined,
      semantic: vectors
        ? async (q, limit, keep) => {
            const v = asked?.text === q ? asked.vector : await this.#queryVector(q);
            if (!v) return [];
            await vectors.flush();
            return vectors.index.search(v, limit, keep);
          }
        : undefined,
      get: (id) => this.#records.get(id),
      episodes: (episodes, termsOf) => this.#episodes.scores(episodes, termsOf),
      speakers: () => this.#speakers,
      causes: this.#causes,
    };
  }

  async #queryVector(query: string): Promise<Float32Array | undefined> {
    if (!this.#vectors) {
      this.#warnFallback('no embedder is configured');
      return undefined;
    }
    try {
      return await this.#vectors.query(query);
    } catch (err) {
      this.#warnFallback((err as Error).message);
      return undefined;
    }
  }

  #warnFallback(why: string): void {
    if (this.#warnedFallback) return;
    this.#warnedFallback = true;
    this.#logger?.warn({ why }, 'vector search unavailable: recall falls back to BM25');
  }

  /** The newest memories first. */
  recent(limit: number): MemoryRecord[] {
    const all = [...this.#records.values()];
    all.sort((a, b) => b.created_at - a.created_at);
    return all.slice(0, limit);
  }
}
