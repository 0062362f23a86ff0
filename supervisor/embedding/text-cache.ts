import { createHash } from 'node:crypto';

import { LRUCache } from 'lru-cache';

/**
 * What a text model answered, by the text's content hash, for at most `entries` texts: the one
 * least recently used goes first. `entries = 0` keeps nothing.
 */
export class TextCache<V extends NonNullable<unknown>> {
  // lru-cache refuses `max: 0` (no bound at all), so keeping nothing is having no cache. It
  // reserves room for every entry up front (measured: 0.44 MB at the default 20,000, 280 MB at
  // the 10,000,000 cache_entries allows), where a Map grew as texts came.
  readonly #lru: LRUCache<string, V> | undefined;

  constructor(entries: number) {
    this.#lru = entries > 0 ? new LRUCache<string, V>({ max: entries }) : undefined;
  }

  /** The key of a text: its SHA-256, base64url. */
  static key(text: string): string {
    return createHash('sha256').update(text).digest('base64url');
  }

  /** The answer kept for `key`, now the most recently used. */
  get(key: string): V | undefined {
    return this.#lru?.get(key);
  }

  set(key: string, value: V): void {
    this.#lru?.set(key, value);
  }
}
