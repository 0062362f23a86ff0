import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { ErrorCode, ThymosError, toThymosError } from '../shared/errors.js';
import { Subjects } from '../shared/subjects.js';
import { SUPERVISOR_OPS, SupervisorRequestSchemas, type SupervisorOp, type SupervisorReply } from '../shared/supervisor-protocol.js';
import { describeIssues } from '../shared/zod-issues.js';
import type { Logger } from '../shared/logger.js';

/** Handles one validated request; the result goes back as `{ ok: true, result }`. */
export type ControlHandlers = {
  [K in SupervisorOp]: (request: ReturnType<(typeof SupervisorRequestSchemas)[K]['parse']>, progress: (p: unknown) => void) => Promise<unknown>;
};

/**
 * The supervisor's control API: request/reply on `thymos.supervisor.<op>`. Every
 * request is validated with zod; every reply is a result or a coded error.
 */
export class ControlApi {
  readonly #nc: NatsConnection;
  readonly #handlers: ControlHandlers;
  readonly #logger: Logger;
  readonly #subs: Subscription[] = [];

  constructor(nc: NatsConnection, handlers: ControlHandlers, logger: Logger) {
    this.#nc = nc;
    this.#handlers = handlers;
    this.#logger = logger;
  }

  start(): void {
    for (const op of SUPERVISOR_OPS) {
      this.#subs.push(this.#nc.subscribe(Subjects.supervisor(op), { callback: (err, msg) => (err ? this.#logger.warn({ err }, 'control subscription error') : void this.#answer(op, msg)) }));
    }
  }

  stop(): void {
    for (const s of this.#subs) s.unsubscribe();
  }

  async #answer(op: SupervisorOp, msg: Msg): Promise<void> {
    let reply: SupervisorReply;
    try {
      let raw: unknown;
      const text = msg.data.length === 0 ? '{}' : msg.string();
      try {
        raw = JSON.parse(text);
      } catch (err) {
        throw new ThymosError(ErrorCode.INVALID_INPUT, `${Subjects.supervisor(op)}: request is not JSON: ${(err as Error).message}`);
      }
      const parsed = SupervisorRequestSchemas[op].safeParse(raw);
      if (!parsed.success) {
        const code = op === 'reconcile' ? ErrorCode.INVALID_CONTEXT : ErrorCode.INVALID_INPUT;
        const paths = describeIssues(parsed.error, raw).replace(/(^|; )context\./g, '$1');
        throw new ThymosError(code, `${op === 'reconcile' ? 'context' : Subjects.supervisor(op)}: ${paths}`, {
          location: { path: parsed.error.issues[0]?.path.slice(op === 'reconcile' ? 1 : 0).map(String).join('.') },
        });
      }
      const request = parsed.data as { progress?: string };
      const progressSubject = request.progress;
      const progress = (p: unknown) => {
        if (progressSubject) this.#nc.publish(progressSubject, JSON.stringify(p));
      };
      const handler = this.#handlers[op] as (r: unknown, p: (p: unknown) => void) => Promise<unknown>;
      reply = { ok: true, result: await handler(parsed.data, progress) };
    } catch (err) {
      const e = toThymosError(err);
      if (e.code === ErrorCode.INTERNAL) this.#logger.error({ err, op }, 'control request failed');
      reply = { ok: false, error: e.toJSON() };
    }
    if (msg.reply) msg.respond(JSON.stringify(reply));
  }
}
