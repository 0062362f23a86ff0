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
}

/** A source with absent parts left out (the database returns them as null or NONE). */
export function normaliseSource(source: MemorySource): MemorySource {
  const out: MemorySource = { kind: source.kind, by: source.by };
  if (source.thread !== undefined && source.thread !== null) out.thread = source.thread;
  if (source.event !== undefined && source.event !== null) out.event = source.event;
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
  last_accessed: number;
  access_count: number;
}

/** A recalled memory with the parts of its score. */
export interface RecallHit {
  memory: MemoryRecord;
  score: {
    /** How it was found: `bm25`, `vector` or `hybrid` (what was asked, or `bm25` when no embedder answered). */
    strategy: 'bm25' | 'vector' | 'hybrid';
    /** Text relevance from the BM25 index, normalised to 0..1 against the best hit of the query. */
    bm25: number;
    /** Cosine similarity of the memory's vector to the query's (vector and hybrid recall). */
    vector?: number;
    /** Memory strength R = e^(-t/S) at the time of the query. */
    strength: number;
    /** Relevance × strength; results are ordered by it. Relevance is bm25, vector, or the fused reciprocal rank normalised to the best. */
    final: number;
  };
}
