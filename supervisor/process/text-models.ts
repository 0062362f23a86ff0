import type { NatsConnection } from '@nats-io/transport-node';

import type { ThymosConfig } from '../../shared/config/index.js';
import { type CleanupStack, CompromiseExtractor, type Logger } from '../../shared/platform/index.js';
import { type FleetNames } from '../../shared/protocol/index.js';
import { ConceptService } from '../embedding/concept-service.js';
import { EmbeddingService } from '../embedding/embedding-service.js';
import { type EventRouterOptions } from '../events/event-router.js';

/** The text models the supervisor serves to the fleet. */
export interface TextModels {
  concepts?: ConceptService;
  embedding?: EmbeddingService;
}

/**
 * The fleet's concept service (unless `[memory] concepts` is off; an agent that finds none
 * extracts on its own) and its embedding service, when `[embedding]` is enabled and its model
 * loads (without it agents recall with BM25 only).
 */
export async function serveTextModels(
  config: ThymosConfig,
  nc: NatsConnection,
  names: FleetNames,
  logger: Logger,
  cleanup: CleanupStack,
): Promise<TextModels> {
  const served: TextModels = {};
  if (config.memory.concepts) {
    const tagger = new CompromiseExtractor();
    const concepts = new ConceptService(tagger);
    concepts.serve(nc, logger, names);
    // The tagger's first use loads its lexicon (~0.5 s of CPU): now, rather than under the first events.
    void tagger.extract(['Mira met Bram at the mill.']).catch(() => undefined);
    cleanup.push(() => concepts.stop());
    served.concepts = concepts;
  }
  if (!config.embedding.enabled) return served;
  try {
    const embedding = await EmbeddingService.load(config);
    embedding.serve(nc, logger, names);
    cleanup.push(() => embedding.stop());
    logger.info({ model: embedding.model, dims: embedding.dims }, 'embedding service ready');
    served.embedding = embedding;
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'no embedding service: agents recall with BM25 only');
  }
  return served;
}

/** What the router sends with each event's copies: its concepts and vector from the services the supervisor runs. */
export function eventHints({ concepts, embedding }: TextModels): EventRouterOptions['hints'] {
  if (!concepts && !embedding) return undefined;
  return async (text) => {
    const [found, vectors] = await Promise.all([
      concepts?.extract([text]).catch(() => undefined),
      embedding?.embed([text]).catch(() => undefined),
    ]);
    const values = vectors?.[0];
    return { concepts: found?.[0], vector: values && embedding ? { model: embedding.model, values } : undefined };
  };
}
