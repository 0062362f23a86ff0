import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import type { z } from 'zod';

import { ErrorCode, ThymosError, WireErrorSchema } from '../errors/errors.js';
import { describeIssues } from '../errors/zod-issues.js';
import { parseWireJson } from '../protocol/parse-json.js';
import { isNoResponders, refusal, replyInbox } from './nats-connection.js';
import type { NatsIdentity } from './nats-identity.js';

/** Why a request got no answer: nobody listens on the subject, or the answer did not come in time. */
export type Unanswered = 'no-responders' | 'timeout';

/** Options of one request over NATS. */
export interface RequestOptions {
  /** How long to wait for the answer. */
  timeoutMs: number;
  /** Who answers: only that identity may publish on the inbox the answer comes to (`replyInbox`). */
  asked: NatsIdentity;
  headers?: MsgHdrs | undefined;
  /** The caller's coded error for a request nobody answered (FLEET_NOT_RUNNING, NATS_UNAVAILABLE…). */
  unanswered: (why: Unanswered, err: unknown) => ThymosError;
  /** Settles the request early: its rejection is the request's (a watchdog that sees the responder die). */
  abandon?: Promise<never> | undefined;
}

/** Options of a request whose reply is `{ ok: true, … }` or `{ ok: false, error }`. */
export interface CodedRequestOptions extends RequestOptions {
  /** Put before the message of an error the responder sent back, e.g. the agent's id. */
  errorPrefix?: string | undefined;
}

/**
 * Sends `body` as JSON on `subject` and returns the reply validated by `schema`. No
 * answer is the caller's `unanswered` error; a reply that is not JSON or does not match
 * `schema` is INVALID_REPLY naming the subject, never a cast.
 */
export async function validatedRequest<T>(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  schema: z.ZodType<T>,
  options: RequestOptions,
): Promise<T> {
  const raw = await send(nc, subject, body, options);
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw invalidReply(subject, describeIssues(parsed.error, raw));
  return parsed.data;
}

/**
 * Sends `body` as JSON on `subject`; the reply is `{ ok: true, …fields }`, checked against
 * `okSchema` and returned, or `{ ok: false, error }`, thrown as a ThymosError with the
 * responder's code, location and details. Anything else is INVALID_REPLY naming the subject.
 */
export async function codedRequest<T>(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  okSchema: z.ZodType<T>,
  options: CodedRequestOptions,
): Promise<T> {
  const raw = await send(nc, subject, body, options);
  const ok = typeof raw === 'object' && raw !== null ? (raw as { ok?: unknown }).ok : undefined;
  if (ok === false) {
    const refused = WireErrorSchema.safeParse((raw as { error?: unknown }).error);
    if (!refused.success) throw invalidReply(subject, `error: ${describeIssues(refused.error, (raw as { error?: unknown }).error)}`);
    const { code, message, location, details } = refused.data;
    throw new ThymosError(code, options.errorPrefix ? `${options.errorPrefix}${message}` : message, { location, details });
  }
  if (ok !== true) throw invalidReply(subject, 'expected {"ok":true,…} or {"ok":false,"error":{…}}');
  const parsed = okSchema.safeParse(raw);
  if (!parsed.success) throw invalidReply(subject, describeIssues(parsed.error, raw));
  return parsed.data;
}

async function send(nc: NatsConnection, subject: string, body: unknown, options: RequestOptions): Promise<unknown> {
  let text: string;
  try {
    const reply = replyInbox(nc, options.asked);
    const pending = nc.request(subject, body === undefined ? '' : JSON.stringify(body), {
      timeout: options.timeoutMs,
      noMux: true,
      reply,
      ...(options.headers ? { headers: options.headers } : {}),
    });
    if (options.abandon) pending.catch(() => undefined); // abandoned: its late failure is nobody's
    const answer = await (options.abandon ? Promise.race([pending, options.abandon]) : pending);
    // An answer is published with no reply subject; one with a reply was sent some other way (a
    // JetStream delivery aimed at this inbox by a pull that named it), not by the one asked.
    if (answer.reply)
      throw invalidReply(
        subject,
        `it came with a reply subject (${answer.reply.split('.', 2).join('.')}…), as what JetStream delivers for a pull does: not an answer from ${options.asked}`,
      );
    text = answer.string();
  } catch (err) {
    if (err instanceof ThymosError) throw err;
    throw refusal(err, subject) ?? options.unanswered(isNoResponders(err) ? 'no-responders' : 'timeout', err);
  }
  try {
    return parseWireJson(text, 'reply');
  } catch (err) {
    throw invalidReply(subject, (err as Error).message, err);
  }
}

function invalidReply(subject: string, what: string, cause?: unknown): ThymosError {
  return new ThymosError(ErrorCode.INVALID_REPLY, `the reply on ${subject} is not what this version of Thymos expects: ${what}`, {
    cause,
    details: { subject },
  });
}
