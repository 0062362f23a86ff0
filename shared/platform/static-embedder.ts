import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import type { Embedder } from './embedder.js';

/** The file of a static model's word vectors: float32, little-endian, one row of `dims` per token id. */
export const STATIC_VECTORS_FILE = 'vectors.f32';

/**
 * A run of letters and digits, or one mark: white space separates, and each ASCII punctuation
 * mark or Unicode P* character stands alone, as BERT's pre-tokenizer splits.
 */
const WORD_OR_MARK = /[^\s!-/:-@[-`{-~\p{P}]+|[!-/:-@[-`{-~]|\p{P}/gu;

/**
 * The offline model Thymos builds (`npm run build:model`: a SIF-weighted sum of GloVe word
 * vectors), computed in JavaScript: lower-case, split on white space and punctuation (a
 * BertPreTokenizer), look each token up (unknown words count nothing), sum the first
 * `maxLength` tokens' vectors and scale to unit length. It gives the vectors fastembed gives for
 * the same model's ONNX graph (a test holds them together), without ONNX Runtime, which is
 * neither installed with Thymos nor needed for a table lookup.
 */
export class StaticEmbedder implements Embedder {
  readonly model: string;
  readonly dims: number;
  readonly #ids: ReadonlyMap<string, number>;
  readonly #vectors: Float32Array;
  readonly #maxLength: number;

  private constructor(model: string, dims: number, ids: ReadonlyMap<string, number>, vectors: Float32Array, maxLength: number) {
    this.model = model;
    this.dims = dims;
    this.#ids = ids;
    this.#vectors = vectors;
    this.#maxLength = maxLength;
  }

  /** Whether `dir` holds a static model this class reads. */
  static isStaticModel(dir: string): boolean {
    return existsSync(join(dir, STATIC_VECTORS_FILE)) && existsSync(join(dir, 'tokenizer.json'));
  }

  /** Reads the model in `dir`; EMBEDDER_UNAVAILABLE names the file and what was wrong with it. */
  static load(dir: string, options: { maxLength: number }): StaticEmbedder {
    const read = (file: string) => {
      try {
        return readFileSync(join(dir, file));
      } catch (err) {
        throw new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `cannot read the embedding model's ${join(dir, file)}: ${(err as Error).message}; build it with npm run build:model, or set [embedding] model_dir`, { cause: err });
      }
    };
    let vocab: Record<string, number>;
    let dims: number;
    try {
      vocab = (JSON.parse(read('tokenizer.json').toString('utf8')) as { model: { vocab: Record<string, number> } }).model.vocab;
      dims = (JSON.parse(read('config.json').toString('utf8')) as { hidden_size: number }).hidden_size;
    } catch (err) {
      if (err instanceof ThymosError) throw err;
      throw new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `the embedding model in ${dir} is damaged: ${(err as Error).message}`, { cause: err });
    }
    const bytes = read(STATIC_VECTORS_FILE);
    const ids = new Map(Object.entries(vocab));
    if (!Number.isInteger(dims) || dims < 1 || bytes.byteLength !== ids.size * dims * 4) {
      throw new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `the embedding model in ${dir} is damaged: ${STATIC_VECTORS_FILE} holds ${bytes.byteLength} bytes, expected ${ids.size} tokens × ${dims} floats × 4`);
    }
    const vectors = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    const name = `custom:${dir.split(/[\\/]/).filter(Boolean).at(-1)}`;
    return new StaticEmbedder(name, dims, ids, vectors, options.maxLength);
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return Promise.resolve(texts.map((t) => this.#one(t)));
  }

  #one(text: string): Float32Array {
    const out = new Float32Array(this.dims);
    const tokens = text.toLowerCase().match(WORD_OR_MARK) ?? [];
    for (const token of tokens.slice(0, this.#maxLength)) {
      const id = this.#ids.get(token);
      if (id === undefined) continue;
      const row = id * this.dims;
      for (let j = 0; j < this.dims; j++) out[j] = out[j]! + this.#vectors[row + j]!;
    }
    let norm = 0;
    for (const x of out) norm += x * x;
    const scale = 1 / Math.max(Math.sqrt(norm), 1e-12);
    for (let j = 0; j < this.dims; j++) out[j] = out[j]! * scale;
    return out;
  }
}
