import type { Bm25Hit } from './bm25-index.js';

/** How relevant a memory is to a query, by each method that found it, before strength. */
export interface Relevance {
  id: string;
  /** 0..1: bm25, vector, or the fused reciprocal rank, normalised to the best. */
  relevance: number;
  /** BM25, normalised to the best lexical match. */
  bm25: number;
  /** Cosine similarity to the query's vector, when vectors were asked. */
  vector?: number;
}

/**
 * Relevance by one method: `bm25` and `vector` normalise their own scores; `hybrid` fuses the
 * two rankings by reciprocal rank (`rrfK`), the vector one at weight `w`.
 */
export function fuseRankings(
  strategy: 'bm25' | 'vector' | 'hybrid',
  lexical: readonly Bm25Hit[],
  semantic: ReadonlyArray<{ id: string; score: number }>,
  w: number,
  rrfK: number,
  withVector: boolean,
): Relevance[] {
  const bestBm25 = lexical[0]?.score ?? 0;
  const byId = new Map<string, { bm25: number; vector: number; lexRank?: number; vecRank?: number }>();
  lexical.forEach((c, rank) => byId.set(c.id, { bm25: bestBm25 > 0 ? c.score / bestBm25 : 0, vector: 0, lexRank: rank }));
  semantic.forEach((c, rank) => {
    const entry = byId.get(c.id) ?? { bm25: 0, vector: 0 };
    entry.vector = Math.max(0, c.score);
    entry.vecRank = rank;
    byId.set(c.id, entry);
  });
  const fused = (e: { lexRank?: number; vecRank?: number }) =>
    (e.lexRank === undefined ? 0 : (1 - w) / (rrfK + e.lexRank + 1)) + (e.vecRank === undefined ? 0 : w / (rrfK + e.vecRank + 1));
  const bestFused = strategy === 'hybrid' ? Math.max(...[...byId.values()].map(fused), 0) : 0;
  return [...byId].map(([id, e]) => ({
    id,
    relevance: strategy === 'bm25' ? e.bm25 : strategy === 'vector' ? e.vector : bestFused > 0 ? fused(e) / bestFused : 0,
    bm25: e.bm25,
    ...(withVector ? { vector: e.vector } : {}),
  }));
}
