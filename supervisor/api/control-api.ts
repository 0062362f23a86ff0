import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import type { z } from 'zod';
import type { SupervisorReply } from '../../shared/protocol/supervisor-protocol.js';
import { describeIssues } from '../../shared/errors/zod-issues.js';
import type { Logger } from '../../shared/platform/logger.js';
import { REQUESTER_HEADER } from '../../shared/nats/supervisor-requester.js';
import { auditDetails, type AuditLog } from './audit-log.js';
import { parseWireJson } from '../../shared/protocol/parse-json.js';

type Schemas = Record<string, z.ZodType>;

/** Handles one validated request; the result goes back as `{ ok: true, result }`. */
export type ControlHandlers<S extends Schemas> = {
  [K in keyof S]: (request: z.output<S[K]>, progress: (p: unknown) => void) => Promise<unknown>;
};

export interface ControlApiOptions<S extends Schemas> {
  /** One zod schema per op. */
  schemas: S;
  /** The subject of an op, e.g. `Subjects.supervisor`. */
  subject: (op: string) => string;
  handlers: ControlHandlers<S>;
  /** The op whose invalid requests are INVALID_CONTEXT (reported without the `context.` prefix). */
  contextOp?: keyof S & string;
  /** Records the ops in `ops` (control actions, not reads) with who asked and how they ended. */
  audit?: { log: AuditLog; ops: ReadonlySet<string> };
}

/**
 * A request/reply API of the supervisor on NATS (`thymos.supervisor.<op>`, `thymos.world.<op>`).
 * Every request is validated with zod; every reply is a result or a coded error.
 */
export class ControlApi<S extends Schemas> {
  readonly #nc: NatsConnection;
  readonly #options: ControlApiOptions<S>;
  readonly #logger: Logger;
  readonly #subs: Subscription[] = [];

  constructor(nc: NatsConnection, options: ControlApiOptions<S>, logger: Logger) {
    this.#nc = nc;
    this.#options = options;
    this.#logger = logger;
  }

  start(): void {
    for (const op of Object.keys(this.#options.schemas)) {
      this.#subs.push(this.#nc.subscribe(this.#options.subject(op), { callback: (err, msg) => (err ? this.#logger.warn({ err }, 'control subscription error') : void this.#answer(op, msg)) }));
    }
  }

  stop(): void {
    for (const s of this.#subs) s.unsubscribe();
  }

  async #answer(op: string, msg: Msg): Promise<void> {
    const { schemas, subject, handlers, contextOp, audit } = this.#options;
    const started = performance.now();
    let reply: SupervisorReply;
    let id: string | undefined;
    try {
      const raw = parseWireJson(msg.data.length === 0 ? '{}' : msg.string(), `${subject(op)}: request`);
      const parsed = schemas[op]!.safeParse(raw);
      if (!parsed.success) {
        const isContext = op === contextOp;
        const code = isContext ? ErrorCode.INVALID_CONTEXT : ErrorCode.INVALID_INPUT;
        const paths = isContext ? describeIssues(parsed.error, raw).replace(/(^|; )context\./g, '$1') : describeIssues(parsed.error, raw);
        throw new ThymosError(code, `${isContext ? 'context' : subject(op)}: ${paths}`, {
          location: { path: parsed.error.issues[0]?.path.slice(isContext ? 1 : 0).map(String).join('.') },
        });
      }
      const request = parsed.data as { progress?: string; id?: unknown };
      if (typeof request.id === 'string') id = request.id;
      const progressSubject = request.progress;
      const progress = (p: unknown) => {
        if (progressSubject) this.#nc.publish(progressSubject, JSON.stringify(p));
      };
      const handler = handlers[op] as (r: unknown, p: (p: unknown) => void) => Promise<unknown>;
      reply = { ok: true, result: await handler(parsed.data, progress) };
    } catch (err) {
      const e = toThymosError(err);
      if (e.code === ErrorCode.INTERNAL) this.#logger.error({ err, op }, 'control request failed');
      reply = { ok: false, error: e.toJSON() };
    }
    if (audit?.ops.has(op)) {
      await audit.log.record({
        at: new Date().toISOString(),
        op,
        by: msg.headers?.get(REQUESTER_HEADER) || 'unknown',
        ...(id !== undefined ? { id } : {}),
        result: reply.ok ? 'ok' : reply.error.code,
        duration_ms: Math.round(performance.now() - started),
        ...(reply.ok ? { details: auditDetails(reply.result) } : {}),
      });
    }
    if (msg.reply) msg.respond(JSON.stringify(reply));
  }
}
