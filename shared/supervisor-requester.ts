import { hostname } from 'node:os';
import { basename } from 'node:path';
import { createInbox, headers, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, ThymosError } from './errors.js';
import { isNoResponders } from './nats-connection.js';
import { Subjects } from './subjects.js';
import { ProgressMessageSchema, SupervisorReplySchema, type ProgressMessage } from './supervisor-protocol.js';
import { parseJsonOrUndefined } from './parse-json.js';

/** The header that says who sent a control request, for the supervisor's audit log. */
export const REQUESTER_HEADER = 'Thymos-By';
/** This process, as the audit log names it: program, pid and host (self-declared, not authenticated). */
const REQUESTER = `${basename(process.argv[1] ?? 'node')}#${process.pid}@${hostname()}`;

/**
 * Sends requests to a fleet's supervisor and turns coded error replies back into
 * ThymosErrors. `subject` maps an op to its subject: the control API by default,
 * `Subjects.world` for the world store.
 */
export class SupervisorRequester {
  readonly #nc: NatsConnection;
  readonly #timeoutMs: number;
  readonly #subject: (op: string) => string;

  constructor(nc: NatsConnection, timeoutMs: number, subject: (op: string) => string = Subjects.supervisor) {
    this.#nc = nc;
    this.#timeoutMs = timeoutMs;
    this.#subject = subject;
  }

  async request<T>(op: string, payload: Record<string, unknown> = {}, options: { onProgress?: (p: ProgressMessage) => void; timeoutMs?: number } = {}): Promise<T> {
    const subject = this.#subject(op);
    let progressSub: ReturnType<NatsConnection['subscribe']> | undefined;
    const body = { ...payload };
    if (options.onProgress) {
      const inbox = createInbox();
      const listener = options.onProgress;
      progressSub = this.#nc.subscribe(inbox, {
        callback: (_err, msg) => {
          const p = ProgressMessageSchema.safeParse(parseJsonOrUndefined(msg.string()));
          if (p.success) listener(p.data);
        },
      });
      body.progress = inbox;
    }
    const timeout = options.timeoutMs ?? this.#timeoutMs;
    let text: string;
    try {
      const h = headers();
      h.set(REQUESTER_HEADER, REQUESTER);
      text = (await this.#nc.request(subject, JSON.stringify(body), { timeout, headers: h })).string();
    } catch (err) {
      if (isNoResponders(err)) {
        throw new ThymosError(ErrorCode.FLEET_NOT_RUNNING, `no supervisor answers on ${subject}: start the fleet with thymos up`, { cause: err });
      }
      throw new ThymosError(ErrorCode.TIMEOUT, `the supervisor did not answer ${op} within ${timeout} ms ([supervisor] request_timeout_ms)`, { cause: err });
    } finally {
      progressSub?.unsubscribe();
    }
    const reply = SupervisorReplySchema.parse(JSON.parse(text));
    if (!reply.ok) throw new ThymosError(reply.error.code, reply.error.message, { location: reply.error.location, details: reply.error.details });
    return reply.result as T;
  }
}
