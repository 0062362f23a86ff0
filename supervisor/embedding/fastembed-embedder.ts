import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Embedder } from '../../shared/platform/index.js';

export interface FastembedOptions {
  /**
   * `custom` runs the model in `modelDir` (what Thymos builds offline); any other value names
   * a fastembed model (e.g. `fast-bge-small-en-v1.5`), downloaded into `cacheDir` on first use.
   */
  model: string;
  /** Directory of a custom model: tokenizer.json, config.json, tokenizer_config.json, special_tokens_map.json and the ONNX file. */
  modelDir: string;
  /** ONNX file of a custom model. @default "model.onnx" */
  modelFile?: string;
  /** Where fastembed keeps downloaded models. */
  cacheDir: string;
  /** Longest input in tokens; fastembed pads every input to it. */
  maxLength: number;
}

/** An in-process fastembed model (ONNX Runtime on the CPU). */
export class FastembedEmbedder implements Embedder {
  readonly model: string;
  readonly dims: number;
  readonly #flag: import('fastembed').FlagEmbedding;

  private constructor(model: string, dims: number, flag: import('fastembed').FlagEmbedding) {
    this.model = model;
    this.dims = dims;
    this.#flag = flag;
  }

  /** Loads the model (downloading a named one if it is not cached); EMBEDDER_UNAVAILABLE says why when it cannot. */
  static async load(options: FastembedOptions): Promise<FastembedEmbedder> {
    let fastembed: typeof import('fastembed');
    try {
      fastembed = await import('fastembed');
    } catch (err) {
      throw new ThymosError(
        ErrorCode.EMBEDDER_UNAVAILABLE,
        `[embedding] model ${JSON.stringify(options.model)} runs in fastembed, which is not installed: npm install fastembed (on Linux x64 with ONNXRUNTIME_NODE_INSTALL_CUDA=skip, or ONNX Runtime's install downloads GPU libraries), or use the offline model (model = "custom")`,
        { cause: err },
      );
    }
    const { EmbeddingModel, FlagEmbedding } = fastembed;
    const custom = options.model === 'custom';
    if (!custom && !(Object.values(EmbeddingModel) as string[]).includes(options.model)) {
      throw new ThymosError(
        ErrorCode.EMBEDDER_UNAVAILABLE,
        `[embedding] model: no fastembed model ${JSON.stringify(options.model)}; expected "custom" or one of ${Object.values(EmbeddingModel)
          .filter((m) => m !== 'custom')
          .join(', ')}`,
      );
    }
    const modelFile = options.modelFile ?? 'model.onnx';
    if (custom && !existsSync(join(options.modelDir, modelFile))) {
      throw new ThymosError(
        ErrorCode.EMBEDDER_UNAVAILABLE,
        `no embedding model at ${join(options.modelDir, modelFile)}: build it with npm run build:model, or set [embedding] model_dir`,
      );
    }
    let flag: import('fastembed').FlagEmbedding;
    try {
      const common = { cacheDir: options.cacheDir, maxLength: options.maxLength, showDownloadProgress: false };
      flag = custom
        ? await FlagEmbedding.init({
            ...common,
            model: EmbeddingModel.CUSTOM,
            modelAbsoluteDirPath: options.modelDir,
            modelName: modelFile,
          })
        : await FlagEmbedding.init({ ...common, model: options.model as Exclude<import('fastembed').EmbeddingModel, 'custom'> });
    } catch (err) {
      throw new ThymosError(
        ErrorCode.EMBEDDER_UNAVAILABLE,
        `cannot load embedding model ${custom ? options.modelDir : options.model}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const probe = await embedWith(flag, ['probe']);
    const name = custom ? `custom:${options.modelDir.split(/[\\/]/).filter(Boolean).at(-1)}` : options.model;
    return new FastembedEmbedder(name, probe[0]!.length, flag);
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return embedWith(this.#flag, texts);
  }
}

async function embedWith(flag: import('fastembed').FlagEmbedding, texts: readonly string[]): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  if (texts.length === 0) return out;
  for await (const batch of flag.embed([...texts], 256)) for (const v of batch) out.push(Float32Array.from(v));
  return out;
}
