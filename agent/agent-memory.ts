import { randomUUID } from 'node:crypto';
import type { MemorySettings } from '../shared/thymos-config.js';
import { Bm25Index } from './bm25-index.js';
import { normaliseSource, type MemoryRecord, type MemorySource, type RecallHit } from './memory-record.js';
import { memoryStrength } from './memory-strength.js';
import type { MemoryStore } from './memory-store.js';

/** A memory to store; everything but the content has a default. */
export interface NewMemory {
  /**
   * A stable id makes the write idempotent: a memory with this id already stored is kept as
   * it is and not written again (how a redelivered event stays one memory). Unset: a new UUID.
   */
  id?: string;
  content: string;
  /** 0..1. @default 0.5 */
  importance?: number;
  /** 0..1. @default 0 */
  emotional_weight?: number;
  /** @default [] */
  tags?: readonly string[];
  source: MemorySource;
}

export interface RecallOptions {
  /** How many memories to return. */
  k: number;
  /** Time of the query (ms); tests pass it to see the forgetting curve. @default Date.now() */
  now?: number;
  /** Reinforce what is returned (access count + 1, last accessed = now). @default true */
  reinforce?: boolean;
  /** Only memories for which this returns true are considered. */
  filter?: (memory: MemoryRecord) => boolean;
}

/** BM25 candidates re-ranked by strength; this many per requested result. */
const CANDIDATES_PER_RESULT = 4;
const MIN_CANDIDATES = 40;

/**
 * An agent's memory: SurrealDB holds every record durably, an in-process BM25 index
 * answers queries, and a map keeps records for scoring. A write is acknowledged only
 * after the database has it; the index follows in the same call.
 */
export class AgentMemory {
  readonly #store: MemoryStore;
  readonly #settings: MemorySettings;
  readonly #index = new Bm25Index();
  readonly #records = new Map<string, MemoryRecord>();

  private constructor(store: MemoryStore, settings: MemorySettings) {
    this.#store = store;
    this.#settings = settings;
  }

  /** Loads every memory from the store and builds the index. */
  static async load(store: MemoryStore, settings: MemorySettings): Promise<AgentMemory> {
    const memory = new AgentMemory(store, settings);
    const rows = await store.all();
    for (const row of rows) memory.#records.set(row.id, row);
    memory.#index.addAll(rows);
    return memory;
  }

  get count(): number {
    return this.#records.size;
  }

  get(id: string): MemoryRecord | undefined {
    return this.#records.get(id);
  }

  async remember(input: NewMemory, now = Date.now()): Promise<MemoryRecord> {
    const [record] = await this.rememberMany([input], now);
    return record!;
  }

  /**
   * Stores several memories in one database write. Inputs whose `id` is already stored (or
   * repeated within the call) are not written again; the stored record is returned for them.
   */
  async rememberMany(inputs: readonly NewMemory[], now = Date.now()): Promise<MemoryRecord[]> {
    const fresh = new Map<string, MemoryRecord>();
    const out: MemoryRecord[] = [];
    for (const input of inputs) {
      const known = input.id === undefined ? undefined : (this.#records.get(input.id) ?? fresh.get(input.id));
      if (known) {
        out.push(known);
        continue;
      }
      const record = this.#toRecord(input, now);
      fresh.set(record.id, record);
      out.push(record);
    }
    await this.#store.insert([...fresh.values()]);
    for (const r of fresh.values()) {
      this.#records.set(r.id, r);
      this.#index.add(r);
    }
    return out;
  }

  /**
   * The `k` memories that best match `query`: BM25 relevance (normalised to the best
   * match) times strength on the forgetting curve. Returned memories are reinforced.
   */
  async recall(query: string, options: RecallOptions): Promise<RecallHit[]> {
    const now = options.now ?? Date.now();
    const filter = options.filter;
    const candidates = this.#index.search(
      query,
      Math.max(MIN_CANDIDATES, options.k * CANDIDATES_PER_RESULT),
      filter ? (id) => { const m = this.#records.get(id); return m !== undefined && filter(m); } : undefined,
    );
    if (candidates.length === 0) return [];
    const best = candidates[0]!.score;
    const hits: RecallHit[] = [];
    for (const c of candidates) {
      const memory = this.#records.get(c.id);
      if (!memory) continue;
      const bm25 = best > 0 ? c.score / best : 0;
      const strength = memoryStrength(memory, now, this.#settings);
      hits.push({ memory, score: { bm25: round(bm25), strength: round(strength), final: round(bm25 * strength) } });
    }
    hits.sort((a, b) => b.score.final - a.score.final || b.memory.created_at - a.memory.created_at);
    const top = hits.slice(0, options.k);
    if (options.reinforce !== false && top.length > 0) {
      await this.#store.touch(
        top.map((h) => h.memory.id),
        now,
      );
      for (const h of top) {
        const updated = { ...h.memory, access_count: h.memory.access_count + 1, last_accessed: now };
        this.#records.set(updated.id, updated);
      }
    }
    return top;
  }

  /** The newest memories first. */
  recent(limit: number): MemoryRecord[] {
    const all = [...this.#records.values()];
    all.sort((a, b) => b.created_at - a.created_at);
    return all.slice(0, limit);
  }

  #toRecord(input: NewMemory, now: number): MemoryRecord {
    return {
      id: input.id ?? randomUUID(),
      content: input.content,
      importance: input.importance ?? 0.5,
      emotional_weight: input.emotional_weight ?? 0,
      tags: [...(input.tags ?? [])],
      source: normaliseSource(input.source),
      created_at: now,
      last_accessed: now,
      access_count: 0,
    };
  }
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
