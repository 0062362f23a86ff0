import type { NatsConnection } from '@nats-io/transport-node';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { codedRequest, type Unanswered, validatedRequest } from '../../shared/nats/index.js';
import type { Embedder } from '../../shared/platform/index.js';
import { decodeVectors, DEFAULT_FLEET_NAMES, EmbedInfoSchema, EmbedOkSchema, type FleetNames } from '../../shared/protocol/index.js';
import { answerWithHints, type HintBook } from './hint-book.js';

/**
 * The fleet's embedding service seen from an agent: `<fleet>.embed` on NATS. A text whose
 * vector came with a heard event (`hints`) is not asked for.
 */
export class RemoteEmbedder implements Embedder {
  readonly model: string;
  readonly dims: number;
  readonly #nc: NatsConnection;
  readonly #names: FleetNames;
  readonly #timeoutMs: number;
  readonly #hints: HintBook | undefined;

  private constructor(nc: NatsConnection, names: FleetNames, model: string, dims: number, timeoutMs: number, hints: HintBook | undefined) {
    this.model = model;
    this.dims = dims;
    this.#nc = nc;
    this.#names = names;
    this.#timeoutMs = timeoutMs;
    this.#hints = hints;
  }

  /** Asks which model the service runs; EMBEDDER_UNAVAILABLE when none answers. */
  static async connect(
    nc: NatsConnection,
    timeoutMs: number,
    names: FleetNames = DEFAULT_FLEET_NAMES,
    hints?: HintBook,
  ): Promise<RemoteEmbedder> {
    let info;
    try {
      info = await validatedRequest(nc, names.embedInfo, undefined, EmbedInfoSchema, {
        timeoutMs,
        asked: 'supervisor',
        unanswered: (why, err) => unavailable(names.embedInfo, why, err),
      });
    } catch (err) {
      throw new ThymosError(
        ErrorCode.EMBEDDER_UNAVAILABLE,
        `no embedding service answers on ${names.embedInfo} ([embedding] enabled, and a model the supervisor could load): ${(err as Error).message}`,
        { cause: err },
      );
    }
    return new RemoteEmbedder(nc, names, info.model, info.dims, timeoutMs, hints);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return answerWithHints(
      texts,
      (text) => this.known(text),
      (rest) => this.#ask(rest),
    );
  }

  known(text: string): Float32Array | undefined {
    return this.#hints?.takeVector(text, this.model, this.dims);
  }

  async #ask(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 1024) {
      const { result: reply } = await codedRequest(this.#nc, this.#names.embed, { texts: texts.slice(i, i + 1024) }, EmbedOkSchema, {
        timeoutMs: this.#timeoutMs,
        asked: 'supervisor',
        unanswered: (why, err) => unavailable(this.#names.embed, why, err),
      });
      if (reply.model !== this.model || reply.dims !== this.dims) {
        throw new ThymosError(
          ErrorCode.EMBEDDER_UNAVAILABLE,
          `the embedding service changed model (${this.model} → ${reply.model}); restart the agent to re-embed`,
        );
      }
      out.push(...decodeVectors(reply.vectors, this.dims));
    }
    return out;
  }
}

function unavailable(subject: string, why: Unanswered, err: unknown): ThymosError {
  const what = why === 'no-responders' ? 'no embedding service answers' : `the embedding service did not answer in time`;
  return new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `${what} on ${subject}: ${(err as Error).message}`, { cause: err });
}
