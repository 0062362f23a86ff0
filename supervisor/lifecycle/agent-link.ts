import type { NatsConnection } from '@nats-io/transport-node';
import type { z } from 'zod';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { agentIdentity, codedRequest } from '../../shared/nats/index.js';
import {
  AgentControlOkSchema,
  type AgentControlRequest,
  type AgentStatusMessage,
  AgentStatusMessageSchema,
  type FleetNames,
  parseJsonOrUndefined,
  type SpareClaim,
  SpareClaimOkSchema,
} from '../../shared/protocol/index.js';
/** The supervisor's side of `<fleet>.agent.<id>.*`: control requests and status notices. */
export class AgentLink {
  readonly #nc: NatsConnection;
  readonly #names: FleetNames;

  constructor(nc: NatsConnection, names: FleetNames) {
    this.#nc = nc;
    this.#names = names;
  }

  /** Sends a control request; a refusal or a missed deadline is a ThymosError with the agent's code. */
  control(id: string, request: AgentControlRequest, timeoutMs: number): Promise<z.infer<typeof AgentControlOkSchema>> {
    const subject = this.#names.agentControl(id);
    return codedRequest(this.#nc, subject, request, AgentControlOkSchema, {
      timeoutMs,
      asked: agentIdentity(id),
      errorPrefix: `${id}: `,
      unanswered: (why, err) =>
        new ThymosError(
          why === 'no-responders' ? ErrorCode.NATS_UNAVAILABLE : ErrorCode.TIMEOUT,
          `${id} did not answer ${request.op} on ${subject} within ${timeoutMs} ms: ${(err as Error).message}`,
          { cause: err },
        ),
    });
  }

  /**
   * Claims a warm spare for agent `claim.agentId`: resolves with the pid once that agent is
   * ready in the spare's process. A refusal is the spare's coded error; no answer within
   * `timeoutMs` (or `abandon` rejecting: the spare exited) fails it.
   */
  claimSpare(slot: string, claim: SpareClaim, timeoutMs: number, abandon: Promise<never>): Promise<{ pid: number }> {
    const subject = this.#names.spareClaim(slot);
    return codedRequest(this.#nc, subject, claim, SpareClaimOkSchema, {
      timeoutMs,
      asked: 'spare',
      abandon,
      errorPrefix: `${claim.agentId} (in ${slot}): `,
      unanswered: (why, err) =>
        new ThymosError(
          why === 'no-responders' ? ErrorCode.AGENT_START_FAILED : ErrorCode.STARTUP_TIMEOUT,
          `${slot} did not answer the claim for ${claim.agentId} on ${subject} within ${timeoutMs} ms: ${(err as Error).message}`,
          { cause: err },
        ),
    });
  }

  /**
   * Resolves with the first `ready` or `heartbeat` notice of `id` published after this
   * call, and with `token` only one that names it; rejects with STARTUP_TIMEOUT after
   * `timeoutMs`. `cancel()` stops waiting.
   */
  waitForLife(id: string, timeoutMs: number, token?: number): { seen: Promise<AgentStatusMessage>; cancel: () => void } {
    const subject = this.#names.agentStatus(id);
    const sub = this.#nc.subscribe(subject);
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<AgentStatusMessage>((resolve, reject) => {
      timer = setTimeout(() => {
        sub.unsubscribe();
        reject(new ThymosError(ErrorCode.STARTUP_TIMEOUT, `${id}: no ready or heartbeat on ${subject} within ${timeoutMs} ms`));
      }, timeoutMs);
      void (async () => {
        for await (const m of sub) {
          // The agent's own status comes with no reply (see AgentHeartbeats).
          if (m.reply) continue;
          const parsed = AgentStatusMessageSchema.safeParse(parseJsonOrUndefined(m.string()));
          if (
            parsed.success &&
            (parsed.data.kind === 'ready' || parsed.data.kind === 'heartbeat') &&
            (token === undefined || parsed.data.token === token)
          ) {
            clearTimeout(timer);
            sub.unsubscribe();
            resolve(parsed.data);
            return;
          }
        }
      })();
    });
    seen.catch(() => undefined);
    return {
      seen,
      cancel: () => {
        clearTimeout(timer);
        sub.unsubscribe();
      },
    };
  }
}
