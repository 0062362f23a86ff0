import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { z } from 'zod';

import { ErrorCode, ThymosError, toThymosError, type WireError } from '../errors/errors.js';
import { describeIssues } from '../errors/zod-issues.js';
import type { Logger } from '../platform/logger.js';
import { isInboxSubject } from '../protocol/fleet-names.js';
import { parseWireJson } from '../protocol/parse-json.js';

/** What a coded responder sends back: the handler's fields with `ok: true`, or a coded error. */
export type CodedReply = ({ ok: true } & Record<string, unknown>) | { ok: false; error: WireError };

/** One request/reply endpoint on NATS. */
export interface CodedEndpoint<S extends z.ZodType> {
  subject: string;
  /** The request's schema, the same one the requester's side validates with. */
  schema: S;
  /** An empty message reads as `{}` (ops without arguments). @default false */
  emptyIsObject?: boolean;
  /** The error for a request that fails `schema`. @default INVALID_INPUT naming the subject and the bad paths */
  invalid?: ((error: z.ZodError, raw: unknown) => ThymosError) | undefined;
  /** Answers a valid request with the reply's fields (sent with `ok: true`); what it throws is sent as a coded error. */
  handle: (request: z.output<S>, msg: Msg) => Promise<Record<string, unknown>>;
  /** Sees every reply before it is sent, with the request when it was valid and the ms since it came (an audit log). */
  onReply?: ((reply: CodedReply, request: z.output<S> | undefined, msg: Msg, ms: number) => Promise<void> | void) | undefined;
}

/**
 * Serves one subject: every request is parsed as wire JSON, validated with the endpoint's
 * schema and handled; every reply is `{ ok: true, … }` or `{ ok: false, error }` with a
 * stable code. Nothing a requester sends makes it throw. `unsubscribe()` ends it.
 */
export function serveCoded<S extends z.ZodType>(nc: NatsConnection, endpoint: CodedEndpoint<S>, logger: Logger): Subscription {
  return nc.subscribe(endpoint.subject, {
    callback: (err, msg) => {
      if (err) logger.warn({ err, subject: endpoint.subject }, 'subscription error');
      // A request is answered only on an inbox: not handled at all otherwise (see isInboxSubject).
      else if (isInboxSubject(msg.reply))
        void answer(endpoint, msg, logger).catch((e: unknown) => logger.error({ err: e, subject: endpoint.subject }, 'reply failed'));
    },
  });
}

/** Serves a constant reply on `subject` (what a service is, for a client to check before it asks). */
export function serveConstant(nc: NatsConnection, subject: string, reply: unknown): Subscription {
  const text = JSON.stringify(reply);
  return nc.subscribe(subject, { callback: (err, msg) => void (!err && isInboxSubject(msg.reply) && msg.respond(text)) });
}

async function answer<S extends z.ZodType>(endpoint: CodedEndpoint<S>, msg: Msg, logger: Logger): Promise<void> {
  const started = performance.now();
  let reply: CodedReply;
  let request: z.output<S> | undefined;
  try {
    const raw = parseWireJson(endpoint.emptyIsObject && msg.data.length === 0 ? '{}' : msg.string(), `${endpoint.subject}: request`);
    const parsed = endpoint.schema.safeParse(raw);
    if (!parsed.success) {
      throw (
        endpoint.invalid?.(parsed.error, raw) ??
        new ThymosError(ErrorCode.INVALID_INPUT, `${endpoint.subject}: ${describeIssues(parsed.error, raw)}`, {
          location: { path: parsed.error.issues[0]?.path.map(String).join('.') },
        })
      );
    }
    request = parsed.data;
    reply = { ok: true, ...(await endpoint.handle(parsed.data, msg)) };
  } catch (err) {
    const e = toThymosError(err);
    if (e.code === ErrorCode.INTERNAL) logger.error({ err, subject: endpoint.subject }, 'request failed');
    reply = { ok: false, error: e.toJSON() };
  }
  await endpoint.onReply?.(reply, request, msg, performance.now() - started);
  msg.respond(JSON.stringify(reply));
}
