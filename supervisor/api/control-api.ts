import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { z } from 'zod';

import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { describeIssues } from '../../shared/errors/zod-issues.js';
import { type CodedReply, serveCoded } from '../../shared/nats/coded-responder.js';
import { REQUESTER_HEADER } from '../../shared/nats/supervisor-requester.js';
import type { Logger } from '../../shared/platform/logger.js';
import { auditDetails, type AuditLog } from './audit-log.js';

type Schemas = Record<string, z.ZodType>;

/** Who sent a request, as it says (`Thymos-By`: program#pid@host); `unknown` when it does not. */
function requesterOf(msg: Msg): string {
  return msg.headers?.get(REQUESTER_HEADER) || 'unknown';
}

/** Handles one validated request; the result goes back as `{ ok: true, result }`, typed by the op's result schema. */
export type ControlHandlers<S extends Schemas, R extends { [K in keyof S]: z.ZodType }> = {
  [K in keyof S]: (request: z.output<S[K]>, progress: (p: unknown) => void, by: string) => Promise<z.input<R[K]>>;
};

export interface ControlApiOptions<S extends Schemas, R extends { [K in keyof S]: z.ZodType }> {
  /** One zod schema per op: what a request must be. */
  schemas: S;
  /** One zod schema per op: what its result is (the requester validates with the same). */
  results: R;
  /** The subject of an op, e.g. `names.supervisor`. */
  subject: (op: string) => string;
  handlers: ControlHandlers<S, R>;
  /** The op whose invalid requests are INVALID_CONTEXT (reported without the `context.` prefix). */
  contextOp?: keyof S & string;
  /** Records the ops in `ops` (control actions, not reads) with who asked and how they ended. */
  /**
   * Ops whose requests are audited; `only` narrows an op to the requests worth it (an agent
   * woken, not every lookup), `details` adds what the request said to what the result says.
   */
  audit?: { log: AuditLog; ops: ReadonlySet<string>; only?: Readonly<Record<string, (request: unknown) => boolean>>; details?: Readonly<Record<string, (request: unknown) => Record<string, unknown>>> };
}

/**
 * A request/reply API of the supervisor on NATS (`<fleet>.supervisor.<op>`, `<fleet>.world.<op>`):
 * one coded endpoint per op. Every request is validated with zod; every reply is a result or
 * a coded error.
 */
export class ControlApi<S extends Schemas, R extends { [K in keyof S]: z.ZodType }> {
  readonly #nc: NatsConnection;
  readonly #options: ControlApiOptions<S, R>;
  readonly #logger: Logger;
  readonly #subs: Subscription[] = [];

  constructor(nc: NatsConnection, options: ControlApiOptions<S, R>, logger: Logger) {
    this.#nc = nc;
    this.#options = options;
    this.#logger = logger;
  }

  start(): void {
    for (const op of Object.keys(this.#options.schemas)) this.#subs.push(this.#serve(op));
  }

  stop(): void {
    for (const s of this.#subs) s.unsubscribe();
  }

  #serve(op: keyof S & string): Subscription {
    const { schemas, subject, handlers, contextOp, audit } = this.#options;
    const isContext = op === contextOp;
    return serveCoded(
      this.#nc,
      {
        subject: subject(op),
        schema: schemas[op]!,
        emptyIsObject: true,
        invalid: isContext
          ? (error, raw) =>
              new ThymosError(ErrorCode.INVALID_CONTEXT, `context: ${describeIssues(error, raw).replace(/(^|; )context\./g, '$1')}`, {
                location: { path: error.issues[0]?.path.slice(1).map(String).join('.') },
              })
          : undefined,
        handle: async (request, msg) => {
          const progressSubject = (request as { progress?: string }).progress;
          const progress = (p: unknown) => {
            if (progressSubject) this.#nc.publish(progressSubject, JSON.stringify(p));
          };
          return { result: await handlers[op](request, progress, requesterOf(msg)) };
        },
        onReply: audit?.ops.has(op)
          ? (reply: CodedReply, request, msg, ms) => {
              if (audit.only?.[op] && !audit.only[op](request)) return undefined;
              const id = (request as { id?: unknown } | undefined)?.id;
              return audit.log.record({
                at: new Date().toISOString(),
                op,
                by: requesterOf(msg),
                ...(typeof id === 'string' ? { id } : {}),
                result: reply.ok ? 'ok' : reply.error.code,
                duration_ms: Math.round(ms),
                ...(reply.ok || audit.details?.[op] ? { details: { ...audit.details?.[op]?.(request), ...(reply.ok ? auditDetails(reply.result) : {}) } } : {}),
              });
            }
          : undefined,
      },
      this.#logger,
    );
  }
}
