import { entry } from './map-entry.js';
import type { MemoryRecord } from './memory-record.js';

const NONE: readonly string[] = [];

type TurnLinks = { prev?: string; next?: string };

/**
 * The turns of each conversation thread, linked in order: every memory with a thread knows
 * the turn before and after it, and each thread its newest turn. Recall uses the links to
 * score a turn with its neighbours; dialogue walks back along them for the recent turns.
 */
export class ThreadTurns {
  /** Thread → id of its newest memory. */
  readonly #last = new Map<string, string>();
  /** A memory of a conversation → the turns before and after it. */
  readonly #links = new Map<string, TurnLinks>();

  /** The turns next to memory `id` (for BM25's neighbour scoring). */
  readonly around = (id: string): readonly string[] => {
    const t = this.#links.get(id);
    if (!t) return NONE;
    return t.prev === undefined ? [t.next!] : t.next === undefined ? [t.prev] : [t.prev, t.next];
  };

  /** Whether any memory belongs to a thread. */
  get linked(): boolean {
    return this.#links.size > 0;
  }

  /** The id of a thread's newest turn. */
  last(thread: string): string | undefined {
    return this.#last.get(thread);
  }

  /** Links a memory of a conversation (it has a thread) to the turn before it. */
  add(r: MemoryRecord): void {
    const thread = r.source.thread;
    if (thread === undefined) return;
    const before = this.#last.get(thread);
    this.#last.set(thread, r.id);
    if (before === undefined) return;
    entry(this.#links, r.id, () => ({}) as TurnLinks).prev = before;
    entry(this.#links, before, () => ({}) as TurnLinks).next = r.id;
  }

  /** The ids of the newest `limit` turns of a thread, newest first (walked back along the links). */
  *newest(thread: string, limit: number): Generator<string> {
    let n = 0;
    for (let id = this.#last.get(thread); id !== undefined && n < limit; id = this.#links.get(id)?.prev, n++) yield id;
  }
}
