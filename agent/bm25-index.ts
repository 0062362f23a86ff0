import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import { STOP_WORDS } from './stop-words.js';

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

/**
 * In-process full-text index over an agent's memories (MiniSearch, BM25+ ranking).
 * It is rebuilt from the database when the agent starts and kept in step on every
 * write; it holds ids and terms only, the records stay in SurrealDB and the agent's map.
 */
export class Bm25Index {
  readonly #search: MiniSearch<IndexedText>;

  constructor() {
    this.#search = new MiniSearch<IndexedText>({
      fields: ['content', 'tags'],
      storeFields: [],
      extractField: (doc, field) => {
        const value = (doc as unknown as Record<string, unknown>)[field];
        return Array.isArray(value) ? value.join(' ') : value;
      },
      processTerm: normaliseTerm,
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

  add(doc: IndexedText): void {
    this.#search.add({ id: doc.id, content: doc.content, tags: doc.tags });
  }

  addAll(docs: readonly IndexedText[]): void {
    this.#search.addAll(docs.map((d) => ({ id: d.id, content: d.content, tags: d.tags })));
  }

  remove(id: string): void {
    if (this.#search.has(id)) this.#search.discard(id);
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
