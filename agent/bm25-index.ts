import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import { STOP_WORDS } from './stop-words.js';

/**
 * Weight of a memory's conversational context against its own words. In a conversation the
 * answer is often a short reply ("Yes, last week!") whose subject is in the turn before it:
 * indexing the neighbouring turns lifted LoCoMo evidence recall@10 from 65.2 % to 72.4 %
 * (docs/benchmarks.md).
 */
const CONTEXT_BOOST = 0.5;

/** What the index needs of a memory. */
export interface IndexedText {
  id: string;
  content: string;
  tags: readonly string[];
  /** Text around it (the turns before and after it in its conversation), weighted less than its own words. */
  context?: string | undefined;
}

export interface Bm25Hit {
  id: string;
  /** Raw BM25+ score of MiniSearch. */
  score: number;
}

/**
 * In-process full-text index over an agent's memories (MiniSearch, BM25+ ranking).
 * It is rebuilt from the database when the agent starts and kept in step on every
 * write; it holds ids and terms only, the records stay in SurrealDB and the agent's map.
 */
export class Bm25Index {
  readonly #search: MiniSearch<IndexedText>;

  constructor() {
    this.#search = new MiniSearch<IndexedText>({
      fields: ['content', 'tags', 'context'],
      storeFields: [],
      extractField: (doc, field) => {
        const value = (doc as unknown as Record<string, unknown>)[field];
        return Array.isArray(value) ? value.join(' ') : value;
      },
      processTerm: normaliseTerm,
      searchOptions: {
        combineWith: 'OR',
        boost: { content: 1, tags: 1.5, context: CONTEXT_BOOST },
        bm25: { k: 1.2, b: 0.75, d: 0.5 },
        processTerm: normaliseTerm,
      },
    });
  }

  get size(): number {
    return this.#search.documentCount;
  }

  add(doc: IndexedText): void {
    this.#search.add(fields(doc));
  }

  addAll(docs: readonly IndexedText[]): void {
    this.#search.addAll(docs.map(fields));
  }

  /**
   * Indexes a document again with a new context. `before` must be the document as it was
   * indexed: it is removed term by term, with no background vacuuming (MiniSearch 7.2's
   * vacuum breaks when the index changes between its batches).
   */
  reindex(before: IndexedText, after: IndexedText): void {
    this.#search.remove(fields(before));
    this.#search.add(fields(after));
  }

  /** The best `limit` matches of `query`, best first. Terms that are all stop words match nothing. */
  search(query: string, limit: number, filter?: (id: string) => boolean): Bm25Hit[] {
    const results = this.#search.search(query, filter ? { filter: (r) => filter(r.id as string) } : undefined);
    const out: Bm25Hit[] = [];
    for (const r of results) {
      out.push({ id: r.id as string, score: r.score });
      if (out.length >= limit) break;
    }
    return out;
  }
}

/** Lower case, stop words out, then the Porter stem: "painting", "painted" and "paints" meet at "paint". */
function normaliseTerm(term: string): string | null {
  const t = term.toLowerCase();
  return t.length === 0 || STOP_WORDS.has(t) ? null : stemmer(t);
}

function fields(d: IndexedText): IndexedText {
  return { id: d.id, content: d.content, tags: d.tags, context: d.context ?? '' };
}
