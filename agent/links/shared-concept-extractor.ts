import type { NatsConnection } from '@nats-io/transport-node';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { codedRequest } from '../../shared/nats/index.js';
import { CompromiseExtractor, type ConceptExtractor, type ExtractedConcept, type Logger } from '../../shared/platform/index.js';
import { CONCEPT_TEXTS_MAX, ConceptOkSchema, type FleetNames } from '../../shared/protocol/index.js';
import { answerWithHints, type HintBook } from './hint-book.js';

/** How long an agent waits for the concept service before it extracts on its own. */
const SERVICE_TIMEOUT_MS = 5000;
/** Characters of text in one request at most, well under NATS's 1 MB message. */
const REQUEST_CHARS_MAX = 256_000;

/**
 * An agent's concept extractor: the fleet's concept service (`<fleet>.concepts`, in the
 * supervisor) once `link` names a connection, which extracts a text once for every agent that
 * hears it and spares each agent the tagger's load and memory; the tagger in this process while
 * unlinked, or when the service does not answer (no supervisor, a timeout), so a memory's
 * concepts are never lost to the fleet's state. A text whose concepts came with a heard event
 * (`hints`) is asked of neither.
 */
export class SharedConceptExtractor implements ConceptExtractor {
  readonly #local: ConceptExtractor;
  readonly #logger: Logger;
  #service: { nc: NatsConnection; names: FleetNames } | undefined;
  #hints: HintBook | undefined;
  #unanswered = 0;

  constructor(logger: Logger, local: ConceptExtractor = new CompromiseExtractor()) {
    this.#local = local;
    this.#logger = logger;
  }

  /** From now on, takes what `hints` holds, then asks the fleet's concept service on `nc`. */
  link(nc: NatsConnection, names: FleetNames, hints?: HintBook): void {
    this.#service = { nc, names };
    this.#hints = hints;
  }

  async extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    return answerWithHints(
      texts,
      (text) => this.known(text),
      (rest) => this.#extract(rest),
    );
  }

  known(text: string): ExtractedConcept[] | undefined {
    return this.#hints?.takeConcepts(text);
  }

  async #extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    const service = this.#service;
    if (!service || texts.length === 0) return this.#local.extract(texts);
    try {
      const out: ExtractedConcept[][] = [];
      for (const chunk of chunks(texts)) {
        const { result } = await codedRequest(service.nc, service.names.concepts, { texts: chunk }, ConceptOkSchema, {
          timeoutMs: SERVICE_TIMEOUT_MS,
          asked: 'supervisor',
          unanswered: (why, err) =>
            new ThymosError(
              ErrorCode.NATS_UNAVAILABLE,
              `${why === 'timeout' ? 'the concept service did not answer in time' : 'no concept service answers'} on ${service.names.concepts}`,
              { cause: err },
            ),
        });
        if (result.concepts.length !== chunk.length)
          throw new ThymosError(
            ErrorCode.INVALID_REPLY,
            `${service.names.concepts} answered ${result.concepts.length} lists for ${chunk.length} texts`,
          );
        out.push(...result.concepts);
      }
      return out;
    } catch (err) {
      // Said a few times, then rarely: a fleet without a supervisor would otherwise say it per memory.
      const level = this.#unanswered++ < 3 || this.#unanswered % 100 === 0 ? 'warn' : 'debug';
      this.#logger[level](
        { err: (err as Error).message, texts: texts.length },
        'concepts extracted in this process: the concept service did not answer',
      );
      return this.#local.extract(texts);
    }
  }
}

/** The texts in requests of at most CONCEPT_TEXTS_MAX texts and about REQUEST_CHARS_MAX characters. */
function* chunks(texts: readonly string[]): Generator<string[]> {
  let chunk: string[] = [];
  let chars = 0;
  for (const text of texts) {
    if (chunk.length > 0 && (chunk.length === CONCEPT_TEXTS_MAX || chars + text.length > REQUEST_CHARS_MAX)) {
      yield chunk;
      chunk = [];
      chars = 0;
    }
    chunk.push(text);
    chars += text.length;
  }
  if (chunk.length > 0) yield chunk;
}
