import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
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
  /** Token → row, as the tokenizer file has it (own keys only: "constructor" is a word, not a method). */
  readonly #ids: Readonly<Record<string, number>>;
  readonly #row: (id: number) => Float32Array | undefined;
  readonly #maxLength: number;

  private constructor(
    model: string,
    dims: number,
    ids: Readonly<Record<string, number>>,
    row: (id: number) => Float32Array | undefined,
    maxLength: number,
  ) {
    this.model = model;
    this.dims = dims;
    this.#ids = ids;
    this.#row = row;
    this.#maxLength = maxLength;
  }

  /** Whether `dir` holds a static model this class reads. */
  static isStaticModel(dir: string): boolean {
    return existsSync(join(dir, STATIC_VECTORS_FILE)) && existsSync(join(dir, 'tokenizer.json'));
  }

  /**
   * Reads the model in `dir`; EMBEDDER_UNAVAILABLE names the file and what was wrong with it.
   * `resident` (the default) reads every word's vector into memory (20 MB for the model Thymos
   * builds): for a process that embeds much text, the fleet's embedding service. Otherwise a row
   * is read from the file when a word first needs it, and the last few thousand are kept: for an
   * agent that embeds a few words now and then (intent resolution), which then neither reads nor
   * holds the rest. The file stays open (one descriptor) for the embedder's life.
   */
  static load(dir: string, options: { maxLength: number; resident?: boolean }): StaticEmbedder {
    const where = (file: string) => join(dir, file);
    const failed = (file: string, err: unknown) =>
      new ThymosError(
        ErrorCode.EMBEDDER_UNAVAILABLE,
        `cannot read the embedding model's ${where(file)}: ${(err as Error).message}; build it with npm run build:model, or set [embedding] model_dir`,
        { cause: err },
      );
    const read = (file: string) => {
      try {
        return readFileSync(where(file));
      } catch (err) {
        throw failed(file, err);
      }
    };
    let vocab: Record<string, number>;
    let dims: number;
    try {
      vocab = (JSON.parse(read('tokenizer.json').toString('utf8')) as { model: { vocab: Record<string, number> } }).model.vocab;
      dims = (JSON.parse(read('config.json').toString('utf8')) as { hidden_size: number }).hidden_size;
    } catch (err) {
      if (err instanceof ThymosError) throw err;
      throw new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `the embedding model in ${dir} is damaged: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const count = vocab !== null && typeof vocab === 'object' ? Object.keys(vocab).length : 0;
    const sized = (bytes: number) => {
      if (!Number.isInteger(dims) || dims < 1 || count === 0 || bytes !== count * dims * 4) {
        throw new ThymosError(
          ErrorCode.EMBEDDER_UNAVAILABLE,
          `the embedding model in ${dir} is damaged: ${STATIC_VECTORS_FILE} holds ${bytes} bytes, expected ${count} tokens × ${dims} floats × 4`,
        );
      }
    };
    const name = `custom:${dir.split(/[\\/]/).filter(Boolean).at(-1)}`;
    if (options.resident ?? true) {
      const bytes = read(STATIC_VECTORS_FILE);
      sized(bytes.byteLength);
      // A file this size is read into a buffer of its own, aligned: viewed as floats, not copied.
      const vectors =
        bytes.byteOffset % 4 === 0
          ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
          : new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
      return new StaticEmbedder(
        name,
        dims,
        vocab,
        (id) => (Number.isInteger(id) && id >= 0 && id < count ? vectors.subarray(id * dims, (id + 1) * dims) : undefined),
        options.maxLength,
      );
    }
    let fd: number;
    try {
      fd = openSync(where(STATIC_VECTORS_FILE), 'r');
    } catch (err) {
      throw failed(STATIC_VECTORS_FILE, err);
    }
    try {
      sized(fstatSync(fd).size);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    return new StaticEmbedder(name, dims, vocab, rowsOnDemand(fd, dims), options.maxLength);
  }

  hasWord(word: string): boolean {
    return Object.hasOwn(this.#ids, word);
  }

  /** The vocabulary's words in id order (special tokens such as `[PAD]` left out): most frequent first in the model Thymos builds, as GloVe lists them. */
  wordsByFrequency(): readonly string[] {
    const byId: string[] = [];
    // An id past the token count has no row (the model's check at load): it is no word of the list.
    const count = Object.keys(this.#ids).length;
    for (const word in this.#ids) {
      const id = this.#ids[word]!;
      if (Number.isInteger(id) && id >= 0 && id < count && !(word.startsWith('[') && word.endsWith(']'))) byId[id] = word;
    }
    return byId.filter((w) => w !== undefined);
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return Promise.resolve(texts.map((t) => this.#one(t)));
  }

  #one(text: string): Float32Array {
    const out = new Float32Array(this.dims);
    const tokens = text.toLowerCase().match(WORD_OR_MARK) ?? [];
    for (const token of tokens.slice(0, this.#maxLength)) {
      if (!Object.hasOwn(this.#ids, token)) continue;
      const row = this.#row(this.#ids[token]!);
      if (!row) continue;
      for (let j = 0; j < this.dims; j++) out[j] = out[j]! + row[j]!;
    }
    let norm = 0;
    for (const x of out) norm += x * x;
    const scale = 1 / Math.max(Math.sqrt(norm), 1e-12);
    for (let j = 0; j < this.dims; j++) out[j] = out[j]! * scale;
    return out;
  }
}

/** Rows kept by an embedder that reads them on demand: about 4 MB of the model Thymos builds. */
const KEPT_ROWS = 10_000;

/** A word's row read from the vectors file when first needed; the last KEPT_ROWS kept (all dropped at once when full). A row the file does not hold is no row. */
function rowsOnDemand(fd: number, dims: number): (id: number) => Float32Array | undefined {
  const kept = new Map<number, Float32Array>();
  const bytes = dims * 4;
  return (id) => {
    let row = kept.get(id);
    if (row) return row;
    if (!Number.isInteger(id) || id < 0) return undefined;
    row = new Float32Array(dims);
    if (readSync(fd, new Uint8Array(row.buffer), 0, bytes, id * bytes) !== bytes) return undefined;
    if (kept.size >= KEPT_ROWS) kept.clear();
    kept.set(id, row);
    return row;
  };
}
