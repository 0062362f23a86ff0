import { indexTerms } from './bm25-index.js';
import { type MemoryRecord, occurredAt } from './memory-record.js';

const DAY_MS = 86_400_000;
/** BM25 over episodes, with the usual constants (not fitted: k1 1.2, b 0.75). */
const K1 = 1.2;
const B = 0.75;

/**
 * The episode a memory belongs to: the turns of one conversation thread on one (UTC) day. A
 * memory of no thread (a heard event, a note) has none: it is an episode of its own.
 */
export function episodeOf(m: Pick<MemoryRecord, 'source' | 'created_at' | 'occurred_at'>): string | undefined {
  return m.source.thread === undefined ? undefined : `${m.source.thread}@${Math.floor(occurredAt(m) / DAY_MS)}`;
}

/**
 * BM25 over episodes, each one document made of all its turns: a session whose turns between
 * them hold the words of a query scores high even when no single turn holds more than one.
 * Kept in step with the memory (memories are added, never changed or removed); it holds term
 * counts per episode, not the text. Only episodes asked for are scored, so a query costs what
 * its candidates' episodes and its words cost, whatever the size of the memory.
 */
export class EpisodeIndex {
  /** Episode → term → how often it occurs there. */
  readonly #counts = new Map<string, Map<string, number>>();
  readonly #lengths = new Map<string, number>();
  /** Term → how many episodes hold it. */
  readonly #episodesWith = new Map<string, number>();
  #totalLength = 0;

  get size(): number {
    return this.#counts.size;
  }

  /** Adds a memory's words to its episode's; a memory of no thread is left out. */
  add(m: Pick<MemoryRecord, 'content' | 'source' | 'created_at' | 'occurred_at'>): void {
    const episode = episodeOf(m);
    if (episode === undefined) return;
    let counts = this.#counts.get(episode);
    if (!counts) this.#counts.set(episode, (counts = new Map()));
    const terms = indexTerms(m.content);
    for (const term of terms) {
      const n = counts.get(term) ?? 0;
      if (n === 0) this.#episodesWith.set(term, (this.#episodesWith.get(term) ?? 0) + 1);
      counts.set(term, n + 1);
    }
    this.#lengths.set(episode, (this.#lengths.get(episode) ?? 0) + terms.length);
    this.#totalLength += terms.length;
  }

  /** The BM25 score of `query` in each of `episodes` (0 where none of its words are; unknown episodes are left out). */
  scores(query: string, episodes: Iterable<string>): Map<string, number> {
    const out = new Map<string, number>();
    const n = this.#counts.size;
    if (n === 0) return out;
    const average = this.#totalLength / n;
    const terms = [...new Set(indexTerms(query))].flatMap((term) => {
      const df = this.#episodesWith.get(term);
      return df ? [{ term, idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)) }] : [];
    });
    for (const episode of episodes) {
      const counts = this.#counts.get(episode);
      if (!counts || out.has(episode)) continue;
      const norm = K1 * (1 - B + (B * this.#lengths.get(episode)!) / average);
      let score = 0;
      for (const { term, idf } of terms) {
        const tf = counts.get(term);
        if (tf) score += (idf * tf * (K1 + 1)) / (tf + norm);
      }
      out.set(episode, score);
    }
    return out;
  }
}
