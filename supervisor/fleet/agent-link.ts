import type { NatsConnection } from '@nats-io/transport-node';
import { AgentControlReplySchema, AgentStatusMessageSchema, type AgentControlRequest, type AgentState, type AgentStatusMessage } from '../../shared/protocol/agent-protocol.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { isNoResponders } from '../../shared/nats/nats-connection.js';
import { Subjects } from '../../shared/protocol/fleet-names.js';
import { parseJsonOrUndefined } from '../../shared/protocol/parse-json.js';

/** The supervisor's side of `thymos.agent.<id>.*`: control requests and status notices. */
export class AgentLink {
  readonly #nc: NatsConnection;

  constructor(nc: NatsConnection) {
    this.#nc = nc;
  }

  /** Sends a control request; a refusal or a missed deadline is a ThymosError with the agent's code. */
  async control(id: string, request: AgentControlRequest, timeoutMs: number): Promise<{ state: AgentState; score?: number | null; snapshot_at?: string }> {
    let text: string;
    try {
      const msg = await this.#nc.request(Subjects.agentControl(id), JSON.stringify(request), { timeout: timeoutMs });
      text = msg.string();
    } catch (err) {
      const noResponders = isNoResponders(err);
      throw new ThymosError(
        noResponders ? ErrorCode.NATS_UNAVAILABLE : ErrorCode.TIMEOUT,
        `${id} did not answer ${request.op} on ${Subjects.agentControl(id)} within ${timeoutMs} ms: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const reply = AgentControlReplySchema.parse(JSON.parse(text));
    if (!reply.ok) throw new ThymosError(reply.error.code, `${id}: ${reply.error.message}`);
    return reply;
  }

  /**
   * Resolves with the first `ready` or `heartbeat` notice of `id` published after this
   * call; rejects with STARTUP_TIMEOUT after `timeoutMs`. `cancel()` stops waiting.
   */
  waitForLife(id: string, timeoutMs: number): { seen: Promise<AgentStatusMessage>; cancel: () => void } {
    const sub = this.#nc.subscribe(Subjects.agentStatus(id));
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<AgentStatusMessage>((resolve, reject) => {
      timer = setTimeout(() => {
        sub.unsubscribe();
        reject(new ThymosError(ErrorCode.STARTUP_TIMEOUT, `${id}: no ready or heartbeat on ${Subjects.agentStatus(id)} within ${timeoutMs} ms`));
      }, timeoutMs);
      void (async () => {
        for await (const m of sub) {
          const parsed = AgentStatusMessageSchema.safeParse(parseJsonOrUndefined(m.string()));
          if (parsed.success && (parsed.data.kind === 'ready' || parsed.data.kind === 'heartbeat')) {
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
