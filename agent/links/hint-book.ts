import { LRUCache } from 'lru-cache';

import type { HeardHints } from '../../shared/protocol/index.js';

/** Texts whose hints are kept at most: a replay hands over 256 at a time, and hints are taken soon after. */
const ENTRIES_MAX = 1024;

/**
 * The hints that came with heard events (`Thymos-Concepts`, `Thymos-Vector`), by memory text,
 * until the agent's concept extractor and embedder take them instead of asking the fleet's
 * services. Each hint is taken once; the oldest texts go first past ENTRIES_MAX, and a text
 * with no hint left is simply asked for.
 */
export class HintBook {
  // Read with peek(): taking a hint must not make its text newer, so a text heard again is
  // what keeps it, and the oldest heard goes first.
  readonly #byText = new LRUCache<string, HeardHints>({ max: ENTRIES_MAX });

  put(text: string, hints: HeardHints): void {
    if (!hints.concepts && !hints.vector) return;
    this.#byText.set(text, { ...hints });
  }

  /** The concepts found in `text`, if a hint said. */
  takeConcepts(text: string): HeardHints['concepts'] {
    const hints = this.#byText.peek(text);
    const concepts = hints?.concepts;
    if (concepts) this.#drop(text, hints, 'concepts');
    return concepts;
  }

  /** The vector of `text` by `model` with `dims` values, if a hint said. */
  takeVector(text: string, model: string, dims: number): Float32Array | undefined {
    const hints = this.#byText.peek(text);
    const vector = hints?.vector;
    if (!vector) return undefined;
    this.#drop(text, hints, 'vector');
    return vector.model === model && vector.values.length === dims ? vector.values : undefined;
  }

  get size(): number {
    return this.#byText.size;
  }

  #drop(text: string, hints: HeardHints, kind: keyof HeardHints): void {
    delete hints[kind];
    if (!hints.concepts && !hints.vector) this.#byText.delete(text);
  }
}

/**
 * Answers for `texts` in order: what `take` finds in the hints, and for the rest one call of
 * `ask` with just those texts.
 */
export async function answerWithHints<T>(
  texts: readonly string[],
  take: (text: string) => T | undefined,
  ask: (texts: readonly string[]) => Promise<T[]>,
): Promise<T[]> {
  const out = texts.map(take);
  const asked = texts.flatMap((text, i) => (out[i] ? [] : [{ text, i }]));
  const answers = await ask(asked.map((a) => a.text));
  asked.forEach((a, k) => (out[a.i] = answers[k]));
  return out as T[];
}
