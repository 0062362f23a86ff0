import { LRUCache } from 'lru-cache';

import { entry } from './map-entry.js';
import { type MemoryRecord, occurredAt } from './memory-record.js';

const DAY_MS = 86_400_000;
/** BM25 over episodes, with the usual constants (not fitted: k1 1.2, b 0.75). */
const K1 = 1.2;
const B = 0.75;
/** Threads whose latest episode's terms are kept, to count each term once per episode. */
const OPEN_THREADS = 64;

/**
 * The episode a memory belongs to: the turns of one conversation thread on one (UTC) day. A
 * memory of no thread (a heard event, a note) has none: it is an episode of its own.
 */
export function episodeOf(m: Pick<MemoryRecord, 'source' | 'created_at' | 'occurred_at'>): string | undefined {
  return m.source.thread === undefined ? undefined : `${m.source.thread}@${Math.floor(occurredAt(m) / DAY_MS)}`;
}

/**
 * Episodes scored as documents: an episode is all its turns, a term occurs in it as often as
 * its turns mention it, its length is its number of turns, and a term's rarity is counted in
 * episodes (a speaker's name in every session tells nothing of which session). So a session
 * whose turns between them hold the words of a query scores high even when no single turn
 * holds more than one. Which turns hold which of the query's words comes from the BM25 search
 * the recall made anyway; this keeps only each episode's memories and, per term, how many
 * episodes hold it. Terms are counted once per episode while it is one of the latest
 * OPEN_THREADS threads' latest episode; a thread that comes back to an earlier day, or after
 * many others, counts the terms of that day again (turns come in order, so this is rare).
 */
export class EpisodeIndex {
  /** Episode → the ids of its memories. */
  readonly #members = new Map<string, string[]>();
  #memories = 0;
  /** Term → how many episodes hold it. */
  readonly #holders = new Map<string, number>();
  /** Thread → its latest episode and the terms counted for it; the least recent thread leaves first. */
  readonly #open = new LRUCache<string, { episode: string; terms: Set<string> }>({ max: OPEN_THREADS });

  get size(): number {
    return this.#members.size;
  }

  /** Adds a memory with the distinct terms of its content to its episode; a memory of no thread is left out. */
  add(m: Pick<MemoryRecord, 'id' | 'source' | 'created_at' | 'occurred_at'>, terms: Iterable<string>): void {
    const episode = episodeOf(m);
    if (episode === undefined) return;
    entry(this.#members, episode, () => [] as string[]).push(m.id);
    this.#memories++;
    const thread = m.source.thread!;
    let open = this.#open.get(thread);
    if (open?.episode !== episode) {
      open = { episode, terms: new Set() };
      this.#open.set(thread, open);
    }
    for (const term of terms) {
      if (open.terms.has(term)) continue;
      open.terms.add(term);
      this.#holders.set(term, (this.#holders.get(term) ?? 0) + 1);
    }
  }

  /**
   * The BM25 score of each of `episodes` (unknown ones left out); `termsOf` gives the query's
   * terms a memory holds (the search's matches).
   */
  scores(episodes: Iterable<string>, termsOf: (id: string) => readonly string[] | undefined): Map<string, number> {
    const out = new Map<string, number>();
    const n = this.#members.size;
    const average = this.#memories / Math.max(1, n);
    for (const episode of episodes) {
      const members = this.#members.get(episode);
      if (!members || out.has(episode)) continue;
      const mentions = new Map<string, number>();
      for (const id of members) for (const term of termsOf(id) ?? []) mentions.set(term, (mentions.get(term) ?? 0) + 1);
      const norm = K1 * (1 - B + (B * members.length) / average);
      let score = 0;
      for (const [term, tf] of mentions) {
        const df = Math.min(n, this.#holders.get(term) ?? 1);
        score += (Math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf * (K1 + 1)) / (tf + norm);
      }
      out.set(episode, score);
    }
    return out;
  }
}
