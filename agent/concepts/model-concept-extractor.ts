import { z } from 'zod';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ConceptExtractor, ExtractedConcept, Logger } from '../../shared/platform/index.js';
import { ExtractedConceptSchema } from '../../shared/protocol/index.js';
import { type GenerateResult, type LlmProvider } from '../llm/llm-provider.js';
import { generateStructured } from '../llm/structured-output.js';

/** Texts in one request to the model: a replay of hundreds goes in several. */
const TEXTS_PER_CALL = 8;
/** Most concepts the model may name in one text. */
const CONCEPTS_PER_TEXT = 32;

const AnswerSchema = z.object({ texts: z.array(z.object({ concepts: z.array(ExtractedConceptSchema).max(CONCEPTS_PER_TEXT) })) });

export interface ModelConceptExtractorOptions {
  /** The `[llm.extraction]` provider (with the agent's override); an offline one hands every text to `fallback`. */
  provider: () => LlmProvider;
  /** What finds concepts when the model is not there or fails: the offline extractor, or the fleet's service. */
  fallback: ConceptExtractor;
  /** The concept types the domain declares, offered to the model beside person, place and organization. */
  conceptTypes?: readonly string[];
  /** Told what each model call cost (the agent's state and metrics count it). */
  spent?: (provider: LlmProvider, result: GenerateResult) => void;
  logger: Logger;
}

/**
 * Concept extraction by the agent's `[llm.extraction]` model: people, places, organisations and
 * the domain's concept types in each text, with the other names a text gives them (aliases,
 * learned with source `extracted`). Eight texts a request, answered as JSON and held to a
 * schema (one entry per text, in order); a model that fails or answers out of shape leaves
 * those texts to the fallback extractor, so a memory always gets its concepts.
 *
 * `known` (the concepts the fleet's service sent with a heard event) is not used: with a model,
 * the agent reads each text itself.
 */
export class ModelConceptExtractor implements ConceptExtractor {
  readonly #o: ModelConceptExtractorOptions;

  constructor(options: ModelConceptExtractorOptions) {
    this.#o = options;
  }

  async extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    const provider = this.#o.provider();
    if (provider.kind === 'offline') return this.#o.fallback.extract(texts);
    const out: ExtractedConcept[][] = [];
    for (let i = 0; i < texts.length; i += TEXTS_PER_CALL) {
      const chunk = texts.slice(i, i + TEXTS_PER_CALL);
      try {
        out.push(...(await this.#ask(provider, chunk)));
      } catch (err) {
        this.#o.logger.warn(
          { err: (err as Error).message, texts: chunk.length },
          'the extraction model failed; the offline extractor found these concepts',
        );
        out.push(...(await this.#o.fallback.extract(chunk)));
      }
    }
    return out;
  }

  async #ask(provider: LlmProvider, texts: readonly string[]): Promise<ExtractedConcept[][]> {
    const types = ['person', 'place', 'organization', ...(this.#o.conceptTypes ?? [])];
    const messages = [
      {
        role: 'system' as const,
        content:
          `You find who and what texts name: the people, places and organisations, and things of these kinds: ${types.join(', ')}. ` +
          'Give each its name as the text writes it, its kind as "type", and the other names the text gives it as "aliases" ' +
          '("Rowan, whom they call the old badger": Rowan, with the alias "the old badger"). Leave out common nouns that name no one. ' +
          'Answer with one JSON object: {"texts": [{"concepts": [{"name": ..., "type": ..., "aliases": [...]}]}]}, one entry per text, in order.',
      },
      { role: 'user' as const, content: texts.map((t, i) => `${i + 1}. ${t}`).join('\n') },
    ];
    const { value } = await generateStructured(provider, { messages }, AnswerSchema, { spent: (r) => this.#o.spent?.(provider, r) });
    if (value.texts.length !== texts.length) {
      throw new ThymosError(
        ErrorCode.LLM_OUTPUT_INVALID,
        `the extraction model answered for ${value.texts.length} text(s) of ${texts.length}`,
      );
    }
    return value.texts.map((t) =>
      t.concepts.map((c) => ({ name: c.name, type: c.type, ...(c.aliases?.length ? { aliases: c.aliases } : {}) })),
    );
  }
}
