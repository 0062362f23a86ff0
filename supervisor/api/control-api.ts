import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { z } from 'zod';

import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { type CodedReply, REQUESTER_HEADER, serveCoded } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';
import { auditDetails, type AuditLog } from './audit-log.js';

type Schemas = Record<string, z.ZodType>;
/** Whose subject a request came on: the client's, the approver's, or an agent's own (the index of the token that names it). */
type Source = 'client' | 'approver' | number;

/**
 * Who sent a request. `who` comes from the subject nats-server let it publish on: `agent-<id>`
 * for an agent's own `<fleet>.agent.<id>.…` (and `agent` is the id), `approver` for the
 * approver's `<fleet>.approver.<op>`, `client` for the API's public subject, which neither agents
 * nor the approver may publish on. `said` is what the request says of itself (`Thymos-By`:
 * program#pid@host, `unknown` when it does not): it tells apart the processes of one identity,
 * and proves nothing.
 */
export interface Requester {
  who: string;
  agent?: string;
  said: string;
}

/** A requester as an approval records who decided: `approver (thymos#4242@host)`. */
export function describeRequester(by: Requester): string {
  return `${by.who} (${by.said})`;
}

/** Handles one validated request; the result goes back as `{ ok: true, result }`, typed by the op's result schema. */
export type ControlHandlers<S extends Schemas, R extends { [K in keyof S]: z.ZodType }> = {
  [K in keyof S]: (request: z.output<S[K]>, progress: (p: unknown) => void, by: Requester) => Promise<z.input<R[K]>>;
};

export interface ControlApiOptions<S extends Schemas, R extends { [K in keyof S]: z.ZodType }> {
  /** One zod schema per op: what a request must be. */
  schemas: S;
  /** One zod schema per op: what its result is (the requester validates with the same). */
  results: R;
  /** The subject of an op, e.g. `names.supervisor`: where the client asks (agents may not publish there). */
  subject: (op: string) => string;
  /**
   * Ops agents call, each on their own subjects: `subject(id, op)` (e.g. `names.agentSupervisor`),
   * served for every agent (`*`), the agent taken from the subject. Ops in `only` are not served on
   * the public subject at all (an agent's own calls, which the client has no business making).
   */
  agents?: { subject: (id: string, op: string) => string; ops: ReadonlySet<string>; only?: ReadonlySet<string> };
  /**
   * Ops the approver calls, on `subject(op)` (e.g. `names.approver`), a subject only its identity
   * may publish on. Ops in `only` are the approver's alone: asked on the public subject, they are
   * UNAUTHORIZED (audited), whatever the request says of itself.
   */
  approver?: { subject: (op: string) => string; ops: ReadonlySet<string>; only?: ReadonlySet<string> };
  handlers: ControlHandlers<S, R>;
  /** The op whose invalid requests are INVALID_CONTEXT (reported without the `context.` prefix). */
  contextOp?: keyof S & string;
  /** Records the ops in `ops` (control actions, not reads) with who asked and how they ended. */
  /**
   * Ops whose requests are audited; `only` narrows an op to the requests worth it (an agent
   * woken, not every lookup), `details` adds what the request said to what the result says.
   */
  audit?: {
    log: AuditLog;
    ops: ReadonlySet<string>;
    only?: Readonly<Record<string, (request: unknown) => boolean>>;
    details?: Readonly<Record<string, (request: unknown) => Record<string, unknown>>>;
  };
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
    const { agents, approver } = this.#options;
    for (const op of Object.keys(this.#options.schemas)) {
      if (!agents?.only?.has(op)) this.#subs.push(this.#serve(op, this.#options.subject(op), 'client'));
      if (agents?.ops.has(op)) {
        const subject = agents.subject('*', op);
        this.#subs.push(this.#serve(op, subject, subject.split('.').indexOf('*')));
      }
      if (approver?.ops.has(op)) this.#subs.push(this.#serve(op, approver.subject(op), 'approver'));
    }
  }

  stop(): void {
    for (const s of this.#subs) s.unsubscribe();
  }

  /** Who sent `msg`: the agent whose subject it came on (its id the token at index `from`), else the identity whose subject it is. */
  #requester(msg: Msg, from: Source): Requester {
    const said = msg.headers?.get(REQUESTER_HEADER) || 'unknown';
    if (typeof from === 'string') return { who: from, said };
    const agent = msg.subject.split('.')[from]!;
    return { who: `agent-${agent}`, agent, said };
  }

  /** Serves `op` on `subject`, a subject of `from`'s: the client's, the approver's, or agents' own (the index of the token that names the agent asking). */
  #serve(op: keyof S & string, subject: string, from: Source): Subscription {
    const { schemas, handlers, contextOp, audit } = this.#options;
    const isContext = op === contextOp;
    const approverOnly = from === 'client' && this.#options.approver?.only?.has(op) === true;
    return serveCoded(
      this.#nc,
      {
        subject,
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
          if (approverOnly) {
            throw new ThymosError(
              ErrorCode.UNAUTHORIZED,
              `${op} is the approver's: only its identity decides what waits for approval (thymos ${op}, or the library's approver()), never the client's`,
            );
          }
          return { result: await handlers[op](request, progress, this.#requester(msg, from)) };
        },
        onReply: audit?.ops.has(op)
          ? (reply: CodedReply, request, msg, ms) => {
              if (audit.only?.[op] && !audit.only[op](request)) return undefined;
              const id = (request as { id?: unknown } | undefined)?.id;
              const by = this.#requester(msg, from);
              return audit.log.record({
                at: new Date().toISOString(),
                op,
                by: by.who,
                via: by.said,
                ...(typeof id === 'string' ? { id } : {}),
                result: reply.ok ? 'ok' : reply.error.code,
                duration_ms: Math.round(ms),
                ...(reply.ok || audit.details?.[op]
                  ? { details: { ...audit.details?.[op]?.(request), ...(reply.ok ? auditDetails(reply.result) : {}) } }
                  : {}),
              });
            }
          : undefined,
      },
      this.#logger,
    );
  }
}
