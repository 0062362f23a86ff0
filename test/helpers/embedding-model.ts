import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { buildEmbeddingModel } from '../../scripts/build-embedding-model.js';
import { FastembedEmbedder } from '../../supervisor/embedding/fastembed-embedder.js';
import { REPO_ROOT } from './workspace.js';

/** The offline model the project builds (`npm run build:model`), built now if it is missing. */
export const MODEL_DIR = join(REPO_ROOT, 'models', 'glove-100d');

export function ensureModel(): string {
  if (!existsSync(join(MODEL_DIR, 'model.onnx')) || !existsSync(join(MODEL_DIR, 'vectors.f32')))
    buildEmbeddingModel({ out: MODEL_DIR, vocab: 50_000 });
  return MODEL_DIR;
}

/** The built model loaded through fastembed's custom-model path. */
export function loadTestEmbedder(): Promise<FastembedEmbedder> {
  return FastembedEmbedder.load({ model: 'custom', modelDir: ensureModel(), cacheDir: join(REPO_ROOT, 'models', 'cache'), maxLength: 128 });
}
