import type { MsgHdrs } from '@nats-io/transport-node';

/**
 * The header every job and dead letter is published with (its deduplication id), and that
 * nothing else in a job or dead-letter stream carries. nats-server answers a pull (no messages, a
 * timeout) on whatever reply subject the pull names, and a stream that listens on that subject
 * keeps the answer under it: a job queue's subject or a dead-letter subject, when an agent names
 * one. Such an answer carries nats-server's own headers only, which the agent cannot choose; a
 * message JetStream delivers there for a pull keeps its own first subject (`ownDelivery`).
 */
export const PUBLISHED_MARK = 'Nats-Msg-Id';

/** Whether a message of a job or dead-letter stream was published there (it has `PUBLISHED_MARK`), not aimed there by a pull. */
export function published(headers: MsgHdrs | undefined): boolean {
  return (headers?.get(PUBLISHED_MARK) ?? '') !== '';
}
