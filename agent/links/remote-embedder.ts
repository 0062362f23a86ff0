import type { NatsConnection } from '@nats-io/transport-node';
import { decodeVectors, EmbedInfoSchema, EmbedReplySchema } from '../../shared/protocol/embed-protocol.js';
import type { Embedder } from '../../shared/platform/embedder.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { Subjects } from '../../shared/protocol/fleet-names.js';
import { SupervisorRequester } from '../../shared/nats/supervisor-requester.js';

/** The fleet's embedding service seen from an agent: `thymos.embed` on NATS. */
export class RemoteEmbedder implements Embedder {
  readonly model: string;
  readonly dims: number;
  readonly #requester: SupervisorRequester;
  readonly #timeoutMs: number;

  private constructor(nc: NatsConnection, model: string, dims: number, timeoutMs: number) {
    this.model = model;
    this.dims = dims;
    this.#timeoutMs = timeoutMs;
    this.#requester = new SupervisorRequester(nc, timeoutMs, () => Subjects.embed);
  }

  /** Asks which model the service runs; EMBEDDER_UNAVAILABLE when none answers. */
  static async connect(nc: NatsConnection, timeoutMs: number): Promise<RemoteEmbedder> {
    let info;
    try {
      info = EmbedInfoSchema.parse(JSON.parse((await nc.request(Subjects.embedInfo, '', { timeout: timeoutMs })).string()));
    } catch (err) {
      throw new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `no embedding service answers on ${Subjects.embedInfo} ([embedding] enabled, and a model the supervisor could load): ${(err as Error).message}`, { cause: err });
    }
    return new RemoteEmbedder(nc, info.model, info.dims, timeoutMs);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 1024) {
      const reply = EmbedReplySchema.parse(await this.#requester.request('embed', { texts: texts.slice(i, i + 1024) }, { timeoutMs: this.#timeoutMs }));
      if (reply.model !== this.model || reply.dims !== this.dims) {
        throw new ThymosError(ErrorCode.EMBEDDER_UNAVAILABLE, `the embedding service changed model (${this.model} → ${reply.model}); restart the agent to re-embed`);
      }
      out.push(...decodeVectors(reply.vectors, this.dims));
    }
    return out;
  }
}
