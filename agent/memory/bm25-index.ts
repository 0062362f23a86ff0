import MiniSearch, { type SearchResult } from 'minisearch';
import { stemmer } from 'stemmer';

import { STOP_WORDS } from './stop-words.js';

/**
 * Share of a match's score lent to the turns before and after it in its conversation. The
 * answer is often a short reply ("Yes, last week!") whose subject is in the turn before it;
 * lending half lifted LoCoMo evidence recall@10 from 65.2 % to 71.5 % (docs/benchmarks.md).
 * Done at query time over the matches, so the index does not grow with context.
 */
const CONTEXT_WEIGHT = 0.5;

/**
 * A query word that occurs in the memories more often than this share of their number, and more
 * than COMMON_OCCURRENCES times, is left out of a query that has rarer words: it weighs little in
 * BM25 (an IDF under about 1.4) and scoring every memory that holds it is what makes such a
 * query slow in a large memory (a word in 43 % of 100,000: 140–180 ms).
 */
const COMMON_SHARE = 0.25;
const COMMON_OCCURRENCES = 10_000;
const tokenize = MiniSearch.getDefault('tokenize') as (text: string) => string[];

/** What the index needs of a memory. */
export interface IndexedText {
  id: string;
  content: string;
  tags: readonly string[];
}

export interface Bm25Hit {
  id: string;
  /** Raw BM25+ score of MiniSearch. */
  score: number;
}

/** BM25 matches, best first, and what any memory holds of the query's terms. */
export interface Bm25Matches {
  hits: Bm25Hit[];
  /** The query's (normalised) terms memory `id` holds; undefined when it holds none. */
  termsOf(id: string): readonly string[] | undefined;
}

/**
 * In-process full-text index over an agent's memories (MiniSearch, BM25+ ranking).
 * It is rebuilt from the database when the agent starts and kept in step on every
 * write; it holds ids and terms only, the records stay in SurrealDB and the agent's map.
 */
export class Bm25Index {
  readonly #search: MiniSearch<IndexedText>;
  /** How often each normalised term occurs in what was indexed. */
  readonly #occurrences = new Map<string, number>();
  /** The content terms of the memory being added. */
  #adding = new Set<string>();

  constructor() {
    this.#search = new MiniSearch<IndexedText>({
      fields: ['content', 'tags'],
      storeFields: [],
      extractField: (doc, field) => {
        const value = (doc as unknown as Record<string, unknown>)[field];
        return Array.isArray(value) ? value.join(' ') : value;
      },
      processTerm: (term, field) => {
        const t = normaliseTerm(term);
        if (t) this.#occurrences.set(t, (this.#occurrences.get(t) ?? 0) + 1);
        if (t && field === 'content') this.#adding.add(t);
        return t;
      },
      searchOptions: {
        combineWith: 'OR',
        boost: { content: 1, tags: 1.5 },
        bm25: { k: 1.2, b: 0.75, d: 0.5 },
        processTerm: normaliseTerm,
      },
    });
  }

  get size(): number {
    return this.#search.documentCount;
  }

  /** Indexes a memory; returns the distinct terms of its content. */
  add(doc: IndexedText): ReadonlySet<string> {
    const terms = (this.#adding = new Set());
    this.#search.add(doc);
    return terms;
  }

  /**
   * The best `limit` matches of `query`, best first. Terms that are all stop words match nothing.
   * With `around` (a memory's neighbouring turns in its conversation), each match also lends
   * CONTEXT_WEIGHT of its score to its neighbours, so a reply is found by the words of the
   * question before it.
   */
  search(rawQuery: string, limit: number, filter?: (id: string) => boolean, around?: (id: string) => readonly string[]): Bm25Hit[] {
    return this.match(rawQuery, limit, filter, around).hits;
  }

  /** `search`, and what any memory holds of the query's terms (for scoring episodes from the same search). */
  match(rawQuery: string, limit: number, filter?: (id: string) => boolean, around?: (id: string) => readonly string[]): Bm25Matches {
    const query = narrowQuery(rawQuery, limit, this.size, (t) => this.#occurrences.get(t) ?? 0);
    const filtered = !around && filter ? { filter: (r: SearchResult) => filter(r.id as string) } : undefined;
    const results = this.#search.search(query, filtered);
    // Every result by id, made when first asked (neighbours' scores, or what an episode holds).
    let raw: Map<string, SearchResult> | undefined;
    const byId = (id: string) => {
      if (!raw) {
        raw = new Map();
        for (const r of results) raw.set(r.id as string, r);
      }
      return raw.get(id);
    };
    const termsOf = (id: string) => byId(id)?.queryTerms;
    if (!around) return { hits: results.slice(0, limit).map((r) => ({ id: r.id as string, score: r.score })), termsOf };
    const scored = (id: string) => (byId(id)?.score ?? 0) + CONTEXT_WEIGHT * around(id).reduce((sum, n) => sum + (byId(n)?.score ?? 0), 0);
    // Rescored: the best matches and their neighbours (a document further down, next to none
    // of them, is left out: it would need two strong neighbours of its own). Widened when the
    // filter leaves too few.
    for (let head = Math.max(limit * 4, 64); ; head *= 4) {
      const candidates = new Set<string>();
      for (const r of results.slice(0, head)) {
        candidates.add(r.id as string);
        for (const n of around(r.id as string)) candidates.add(n);
      }
      const out: Bm25Hit[] = [];
      for (const id of candidates) if (!filter || filter(id)) out.push({ id, score: scored(id) });
      if (out.length >= limit || head >= results.length) return { hits: out.sort((a, b) => b.score - a.score).slice(0, limit), termsOf };
    }
  }
}

/**
 * `query` without the words that occur more than COMMON_SHARE × `size` (and COMMON_OCCURRENCES)
 * times, when its other words occur at least `limit` times between them, so they can fill the
 * results alone. A memory of COMMON_OCCURRENCES memories or fewer keeps every word.
 */
export function narrowQuery(query: string, limit: number, size: number, occurrences: (term: string) => number): string {
  if (size <= COMMON_OCCURRENCES) return query;
  const bar = Math.max(size * COMMON_SHARE, COMMON_OCCURRENCES);
  const words = tokenize(query).flatMap((word) => {
    const term = normaliseTerm(word);
    return term ? [{ word, count: occurrences(term) }] : [];
  });
  const kept = words.filter((w) => w.count <= bar);
  if (kept.length === 0 || kept.length === words.length || kept.reduce((n, w) => n + w.count, 0) < limit) return query;
  return kept.map((w) => w.word).join(' ');
}

/** Lower case, stop words out, then the Porter stem: "painting", "painted" and "paints" meet at "paint". */
function normaliseTerm(term: string): string | null {
  const t = term.toLowerCase();
  return t.length === 0 || STOP_WORDS.has(t) ? null : stemmer(t);
}
