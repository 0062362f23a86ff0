import { dot } from '../../shared/platform/index.js';

export interface VectorHit {
  id: string;
  /** Cosine similarity to the query, -1..1. */
  score: number;
}

/**
 * An agent's memories as unit vectors in one growing Float32Array, searched exhaustively.
 * At 10,000 memories of 100 dimensions a query is a million multiply-adds: about a
 * millisecond, with no index to build or keep consistent (docs/benchmarks.md).
 */
export class VectorIndex {
  readonly #dims: number;
  #matrix: Float32Array;
  readonly #ids: string[] = [];
  readonly #rows = new Map<string, number>();

  constructor(dims: number, capacity = 1024) {
    this.#dims = dims;
    this.#matrix = new Float32Array(dims * capacity);
  }

  get dims(): number {
    return this.#dims;
  }

  get size(): number {
    return this.#ids.length;
  }

  has(id: string): boolean {
    return this.#rows.has(id);
  }

  /** The cosine of `id`'s vector to `query`; undefined when `id` has none. */
  cosine(query: Float32Array, id: string): number | undefined {
    const row = this.#rows.get(id);
    return row === undefined ? undefined : dot(query, this.#matrix, row * this.#dims);
  }

  /** Adds (or replaces) the vector of `id`. */
  set(id: string, vector: Float32Array): void {
    if (vector.length !== this.#dims) throw new Error(`vector of ${vector.length} dimensions for an index of ${this.#dims}`);
    let row = this.#rows.get(id);
    if (row === undefined) {
      row = this.#ids.length;
      if ((row + 1) * this.#dims > this.#matrix.length) {
        const grown = new Float32Array(this.#matrix.length * 2);
        grown.set(this.#matrix);
        this.#matrix = grown;
      }
      this.#ids.push(id);
      this.#rows.set(id, row);
    }
    this.#matrix.set(vector, row * this.#dims);
  }

  /** The `limit` nearest vectors to `query`, best first. */
  search(query: Float32Array, limit: number, filter?: (id: string) => boolean): VectorHit[] {
    const hits: VectorHit[] = [];
    let floor = -Infinity;
    for (let row = 0; row < this.#ids.length; row++) {
      const score = dot(query, this.#matrix, row * this.#dims);
      if (hits.length >= limit && score <= floor) continue;
      const id = this.#ids[row]!;
      if (filter && !filter(id)) continue;
      hits.push({ id, score });
      if (hits.length > limit * 2) {
        hits.sort((a, b) => b.score - a.score);
        hits.length = limit;
        floor = hits[limit - 1]!.score;
      }
    }
    hits.sort((a, b) => b.score - a.score);
    return hits.slice(0, limit);
  }
}
