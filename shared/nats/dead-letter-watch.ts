import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';

import { ErrorCode, isThymosError } from '../errors/errors.js';
import type { Logger } from '../platform/logger.js';
import type { FleetNames } from '../protocol/fleet-names.js';
import { parseJsonOrUndefined } from '../protocol/parse-json.js';
import { writeDeadLetter } from './dead-letters.js';

/** Where nats-server says a message reached its consumer's `max_deliver` unacknowledged. */
const MAX_DELIVERIES = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES';
const AdvisorySchema = z.object({
  stream: z.string(),
  consumer: z.string(),
  stream_seq: z.number().int().positive(),
  deliveries: z.number().int().nonnegative(),
});

/**
 * Catches the jobs whose worker died on their last delivery (nats-server 2.9 dead-letters
 * nothing itself): on the max-deliveries advisory of a job stream, the job still in the stream
 * is written as a dead letter (as by `supervisor`, deduplicated with what its worker would
 * have given up) and taken off the queue. A job its worker gave up on itself is off the queue
 * already, so it is not found here and nothing happens. An advisory is not kept: one sent
 * while the supervisor is down is missed, and its job stays in the queue (`jobs ls` counts it).
 *
 * Only nats-server's own advisory is acted on: it comes with no reply subject, on the subject that
 * names its stream and consumer. No identity but the supervisor may publish on `$JS.EVENT.>`, and a
 * message JetStream delivers here because a pull named this subject as its reply carries
 * `$JS.ACK.…` (and its first subject): such a message is ignored.
 */
export function watchLastDeliveries(
  nc: NatsConnection,
  jsm: JetStreamManager,
  queues: readonly string[],
  names: FleetNames,
  logger: Logger,
): Subscription {
  const byStream = new Map(queues.map((q) => [names.jobStream(q), q]));
  return nc.subscribe(`${MAX_DELIVERIES}.*.*`, {
    callback: (err, msg) => {
      if (err || msg.reply) return;
      const advisory = AdvisorySchema.safeParse(parseJsonOrUndefined(msg.string()));
      if (!advisory.success || msg.subject !== `${MAX_DELIVERIES}.${advisory.data.stream}.${advisory.data.consumer}`) return;
      const { stream, consumer, stream_seq: seq, deliveries } = advisory.data;
      const queue = byStream.get(stream);
      if (queue === undefined || !consumer.startsWith('skill_')) return;
      const reason = {
        code: ErrorCode.TIMEOUT,
        message: `its worker did not finish it on the last of ${deliveries} deliveries (it stopped or went silent past ackWaitMs)`,
      };
      writeDeadLetter(
        jsm,
        nc,
        { queue, skill: consumer.slice('skill_'.length), seq, attempts: deliveries, reason, agent: 'supervisor' },
        names,
      ).then(
        () => logger.warn({ seq, queue, attempts: deliveries }, 'job given up after its last delivery went unanswered: a dead letter'),
        (e: unknown) => {
          // Already given up by its worker, or not a job of that skill: nothing to do.
          if (isThymosError(e, ErrorCode.NOT_FOUND) || isThymosError(e, ErrorCode.UNAUTHORIZED)) return;
          logger.error({ err: e, stream, seq }, 'could not dead-letter a job past its last delivery');
        },
      );
    },
  });
}
