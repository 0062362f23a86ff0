import type { NatsConnection, Subscription } from '@nats-io/transport-node';

import { serveCoded } from '../../shared/nats/index.js';
import type { ConceptExtractor, ExtractedConcept, Logger } from '../../shared/platform/index.js';
import { ConceptRequestSchema, DEFAULT_FLEET_NAMES, type FleetNames } from '../../shared/protocol/index.js';
import { TextCache } from './text-cache.js';

/** Texts whose concepts are kept, by content hash: an event heard by many agents is extracted once. */
const CACHE_ENTRIES = 20_000;

/**
 * The fleet's concept extractor, in the supervisor: answers `<fleet>.concepts` with the people,
 * places and organisations each text names. Agents ask here instead of loading the tagger
 * themselves, so the ten agents that hear one event cost one extraction, not ten; a text already
 * being extracted for one request is waited for by the next. Results are cached by content hash.
 */
export class ConceptService {
  readonly #extractor: ConceptExtractor;
  readonly #cache = new TextCache<ExtractedConcept[]>(CACHE_ENTRIES);
  readonly #inFlight = new Map<string, Promise<ExtractedConcept[]>>();
  #sub: Subscription | undefined;
  stats = { texts: 0 };

  constructor(extractor: ConceptExtractor) {
    this.#extractor = extractor;
  }

  /** The concepts of each text, from the cache or the extractor, in order. */
  async extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    this.stats.texts += texts.length;
    const fresh: Array<{ text: string; resolve: (c: ExtractedConcept[]) => void; reject: (err: unknown) => void }> = [];
    const results = texts.map((text) => {
      const key = TextCache.key(text);
      const hit = this.#cache.get(key) ?? this.#inFlight.get(key);
      if (hit) return hit;
      const pending = new Promise<ExtractedConcept[]>((resolve, reject) => fresh.push({ text, resolve, reject }));
      this.#inFlight.set(key, pending);
      void pending.then(
        (concepts) => {
          this.#inFlight.delete(key);
          this.#cache.set(key, concepts);
        },
        () => this.#inFlight.delete(key),
      );
      return pending;
    });
    if (fresh.length > 0) {
      try {
        const found = await this.#extractor.extract(fresh.map((f) => f.text));
        fresh.forEach((f, i) => f.resolve(found[i] ?? []));
      } catch (err) {
        for (const f of fresh) f.reject(err);
      }
    }
    return Promise.all(results);
  }

  /** Serves `<fleet>.concepts` until `stop()`. */
  serve(nc: NatsConnection, logger: Logger, names: FleetNames = DEFAULT_FLEET_NAMES): void {
    this.#sub = serveCoded(
      nc,
      {
        subject: names.concepts,
        schema: ConceptRequestSchema,
        handle: async ({ texts }) => ({ result: { concepts: await this.extract(texts) } }),
      },
      logger,
    );
  }

  stop(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
  }
}
