/**
 * Turns texts into unit-length vectors. Implemented in-process by `FastembedEmbedder` and,
 * for agents, by a client of the fleet's embedding service (`thymos.embed` on NATS).
 */
export interface Embedder {
  /** Name of the model, stored with every vector so a changed model is noticed. */
  readonly model: string;
  /** Length of every vector. */
  readonly dims: number;
  /** One unit-length vector per text, in order. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  /**
   * The vector of `text` when it is at hand without asking (it came with a heard event), taken
   * once; undefined otherwise. Lets a memory and its vector be written together.
   */
  known?(text: string): Float32Array | undefined;
  /** Whether the model's vocabulary holds this word (lower-case), when it is a table of words: a word it holds is a word, not a typo. */
  hasWord?(word: string): boolean;
  /** The model's words, most frequent first, when it is a table of words (the GloVe model Thymos builds lists them so). */
  wordsByFrequency?(): readonly string[];
}

/** Dot product of two vectors of the same length (the cosine, for unit vectors). */
export function dot(a: Float32Array, b: Float32Array, offset = 0): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[offset + i]!;
  return s;
}
