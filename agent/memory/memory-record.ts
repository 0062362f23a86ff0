import { randomUUID } from 'node:crypto';

/** Where a memory came from. */
export interface MemorySource {
  /** `told` (remember tool), `dialogue`, `knowledge` (domain schema), `event`, … */
  kind: string;
  /** Who caused it: a speaker, a client, an event source. */
  by: string;
  /** Conversation thread, when it came from dialogue. */
  thread?: string;
  /** Event id, when it came from a world event. */
  event?: string;
  /** The provider and model that wrote it (`openai-compatible:llama3.2`, `offline`), when a model did. */
  model?: string;
}

/** A source with absent parts left out (the database returns them as null or NONE). */
export function normaliseSource(source: MemorySource): MemorySource {
  const out: MemorySource = { kind: source.kind, by: source.by };
  if (source.thread !== undefined && source.thread !== null) out.thread = source.thread;
  if (source.event !== undefined && source.event !== null) out.event = source.event;
  if (source.model !== undefined && source.model !== null) out.model = source.model;
  return out;
}

/** One memory of one agent, as stored. Times are milliseconds since the epoch. */
export interface MemoryRecord {
  id: string;
  content: string;
  /** 0..1 */
  importance: number;
  /** 0..1 */
  emotional_weight: number;
  tags: string[];
  source: MemorySource;
  created_at: number;
  /**
   * When what it tells happened or was said, when that is not when it was stored: an event
   * heard on waking, a story told of last winter, a conversation loaded from elsewhere. Unset:
   * `created_at`.
   */
  occurred_at?: number;
  last_accessed: number;
  access_count: number;
  /** Memories this one was made from (an insight's or a digest's sources). */
  derived_from?: string[];
  /** Which insight this is (e.g. `theme:elder_rowan+wolves@all`); a newer one with the same key supersedes it. */
  insight_key?: string;
  /** The memory that replaced this one as what the agent believes; it is kept, and left out of recall unless asked for. */
  superseded_by?: string;
  superseded_reason?: string;
  superseded_at?: number;
  /** When it faded below `[memory] demote_below`; kept, and left out of recall unless asked for. */
  demoted_at?: number;
  /** The digest memory that summarises it together with other faded memories. */
  compacted_into?: string;
}

/** Lineage and importance a consolidation may change on a stored memory; content never changes. */
export type MemoryChanges = Partial<
  Pick<MemoryRecord, 'importance' | 'superseded_by' | 'superseded_reason' | 'superseded_at' | 'demoted_at' | 'compacted_into'>
>;

/** When what a memory tells happened: `occurred_at`, else when it was stored. */
export function occurredAt(m: Pick<MemoryRecord, 'created_at' | 'occurred_at'>): number {
  return m.occurred_at ?? m.created_at;
}

/** Whether recall finds a memory by default: not superseded and not demoted. */
export function isCurrent(m: MemoryRecord): boolean {
  return m.superseded_by === undefined && m.demoted_at === undefined;
}

/** A recalled memory with the parts of its score. */
export interface RecallHit {
  memory: MemoryRecord;
  score: {
    /** How it was found: `bm25`, `vector`, `hybrid` or `cascade` (what was asked, or `bm25` when no embedder answered). */
    strategy: 'bm25' | 'vector' | 'hybrid' | 'cascade';
    /** Text relevance from the BM25 index, normalised to 0..1 against the best hit of the query. */
    bm25: number;
    /** Cosine similarity of the memory's vector to the query's (vector and hybrid recall). */
    vector?: number;
    /** Memory strength R = e^(-t/S) at the time of the query. */
    strength: number;
    /** Which stages of a cascade found or lifted it: structural, temporal, lexical, causal, semantic. */
    stages?: Array<'structural' | 'temporal' | 'lexical' | 'causal' | 'semantic'>;
    /** Found by the cascade's semantic stage alone: similar in meaning, matched by nothing exact. */
    fuzzy?: boolean;
    /** Relevance × strength; results are ordered by it. Relevance is bm25, vector, or the fused reciprocal rank normalised to the best. */
    final: number;
  };
}

/** A new memory as stored: defaults filled in, stored and last accessed `now`. */
export function newRecord(
  input: {
    id?: string | undefined;
    content: string;
    importance?: number | undefined;
    emotional_weight?: number | undefined;
    tags?: readonly string[] | undefined;
    source: MemorySource;
    occurred_at?: number | undefined;
  },
  now: number,
): MemoryRecord {
  return {
    id: input.id ?? randomUUID(),
    content: input.content,
    importance: input.importance ?? 0.5,
    emotional_weight: input.emotional_weight ?? 0,
    tags: [...(input.tags ?? [])],
    source: normaliseSource(input.source),
    created_at: now,
    ...(input.occurred_at !== undefined && input.occurred_at !== now ? { occurred_at: input.occurred_at } : {}),
    last_accessed: now,
    access_count: 0,
  };
}

/** Which memories a recall considers: current ones (unless asked otherwise) that pass the caller's filter; undefined when all do. */
export function recallFilter(
  get: (id: string) => MemoryRecord | undefined,
  options: {
    filter?: ((m: MemoryRecord) => boolean) | undefined;
    includeSuperseded?: boolean | undefined;
    includeDemoted?: boolean | undefined;
  },
): ((id: string) => boolean) | undefined {
  const { filter, includeSuperseded = false, includeDemoted = false } = options;
  if (!filter && includeSuperseded && includeDemoted) return undefined;
  return (id) => {
    const m = get(id);
    if (!m) return false;
    if (!includeSuperseded && m.superseded_by !== undefined) return false;
    if (!includeDemoted && m.demoted_at !== undefined) return false;
    return filter ? filter(m) : true;
  };
}
