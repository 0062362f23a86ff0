import { createHash } from 'node:crypto';

/**
 * What a text model answered, by the text's content hash, for at most `entries` texts: the one
 * least recently used goes first. `entries = 0` keeps nothing.
 */
export class TextCache<V> {
  readonly #entries: number;
  readonly #map = new Map<string, V>();

  constructor(entries: number) {
    this.#entries = entries;
  }

  /** The key of a text: its SHA-256, base64url. */
  static key(text: string): string {
    return createHash('sha256').update(text).digest('base64url');
  }

  /** The answer kept for `key`, now the most recently used. */
  get(key: string): V | undefined {
    const hit = this.#map.get(key);
    if (hit !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, hit);
    }
    return hit;
  }

  set(key: string, value: V): void {
    if (this.#entries === 0) return;
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > this.#entries) this.#map.delete(this.#map.keys().next().value!);
  }
}
