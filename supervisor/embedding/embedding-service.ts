import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import PQueue from 'p-queue';

import { offlineModelDir, type ThymosConfig } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { serveCoded, serveConstant } from '../../shared/nats/index.js';
import { type Embedder, type Logger, StaticEmbedder } from '../../shared/platform/index.js';
import { DEFAULT_FLEET_NAMES, EmbedRequestSchema, encodeVectors, type FleetNames } from '../../shared/protocol/index.js';
import { FastembedEmbedder } from './fastembed-embedder.js';
import { TextCache } from './text-cache.js';

interface Waiting {
  text: string;
  key: string;
  resolve: (v: Float32Array) => void;
  reject: (err: unknown) => void;
}

/**
 * The fleet's one embedding model, in the supervisor: answers `<fleet>.embed` with vectors.
 * Texts of requests that arrive while the model is busy are merged into the next run (up to
 * `[embedding] batch_max`), one run at a time (p-queue); vectors are cached by content hash,
 * so a text is embedded once.
 */
export class EmbeddingService {
  readonly #embedder: Embedder;
  readonly #batchMax: number;
  readonly #cache: TextCache<Float32Array>;
  readonly #inFlight = new Map<string, Promise<Float32Array>>();
  readonly #queue = new PQueue({ concurrency: 1 });
  #waiting: Waiting[] = [];
  #scheduled = false;
  #subs: Subscription[] = [];
  stats = { requests: 0, texts: 0, cached: 0, runs: 0 };

  constructor(embedder: Embedder, options: { batchMax: number; cacheEntries: number }) {
    this.#embedder = embedder;
    this.#batchMax = options.batchMax;
    this.#cache = new TextCache(options.cacheEntries);
  }

  /**
   * Loads the configured model: a static model Thymos built (the offline default) is read in
   * JavaScript; any other custom ONNX model, or a named fastembed model, runs in fastembed.
   */
  static async load(config: ThymosConfig): Promise<EmbeddingService> {
    const e = config.embedding;
    const modelDir = config.embeddingModelPath ?? offlineModelDir();
    const embedder =
      e.model === 'custom' && StaticEmbedder.isStaticModel(modelDir)
        ? StaticEmbedder.load(modelDir, { maxLength: e.max_length })
        : await FastembedEmbedder.load({ model: e.model, modelDir, cacheDir: config.embeddingCachePath, maxLength: e.max_length });
    return new EmbeddingService(embedder, { batchMax: e.batch_max, cacheEntries: e.cache_entries });
  }

  get model(): string {
    return this.#embedder.model;
  }

  get dims(): number {
    return this.#embedder.dims;
  }

  /** Vectors for `texts`, from the cache or the model. */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.stats.texts += texts.length;
    return Promise.all(
      texts.map((text) => {
        const key = TextCache.key(text);
        const hit = this.#cache.get(key);
        if (hit) {
          this.stats.cached++;
          return hit;
        }
        // The same text asked for again while it waits (ten agents hearing one event) joins it.
        const inFlight = this.#inFlight.get(key);
        if (inFlight) {
          this.stats.cached++;
          return inFlight;
        }
        const pending = new Promise<Float32Array>((resolve, reject) => {
          this.#waiting.push({ text, key, resolve, reject });
          this.#schedule();
        });
        this.#inFlight.set(key, pending);
        void pending.finally(() => this.#inFlight.delete(key)).catch(() => undefined);
        return pending;
      }),
    );
  }

  /** Serves `<fleet>.embed` and `<fleet>.embed.info` until `stop()`. */
  serve(nc: NatsConnection, logger: Logger, names: FleetNames = DEFAULT_FLEET_NAMES): void {
    this.#subs.push(serveConstant(nc, names.embedInfo, { model: this.model, dims: this.dims }));
    this.#subs.push(
      serveCoded(
        nc,
        {
          subject: names.embed,
          schema: EmbedRequestSchema,
          handle: async ({ texts }) => {
            this.stats.requests++;
            const vectors = await this.embed(texts);
            return { result: { model: this.model, dims: this.dims, vectors: encodeVectors(vectors) } };
          },
        },
        logger,
      ),
    );
  }

  stop(): void {
    for (const s of this.#subs) s.unsubscribe();
    this.#subs = [];
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    void this.#queue.add(() => this.#run());
  }

  /** One model run over the texts waiting now (at most batch_max); more waiting → another run after it. */
  async #run(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#waiting.splice(0, this.#batchMax);
    if (this.#waiting.length > 0) this.#schedule();
    if (batch.length === 0) return;
    this.stats.runs++;
    try {
      const vectors = await this.#embedder.embed(batch.map((w) => w.text));
      batch.forEach((w, i) => {
        const v = vectors[i]!;
        this.#cache.set(w.key, v);
        w.resolve(v);
      });
    } catch (err) {
      const e = new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `the embedding model failed: ${(err as Error).message}`, { cause: err });
      for (const w of batch) w.reject(e);
    }
  }
}
