import { jetstream, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';

import { ErrorCode } from '../errors/errors.js';
import type { Logger } from '../platform/logger.js';
import type { FleetNames } from '../protocol/fleet-names.js';
import { type DeadLetter, deadLetterId, JobSchema } from '../protocol/job.js';
import { parseJsonOrUndefined } from '../protocol/parse-json.js';

/** Where nats-server says a message reached its consumer's `max_deliver` unacknowledged. */
const MAX_DELIVERIES = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.*.*';
const AdvisorySchema = z.object({ stream: z.string(), consumer: z.string(), stream_seq: z.number().int().positive(), deliveries: z.number().int().nonnegative() });

/**
 * Catches the jobs whose worker died on their last delivery (nats-server 2.9 dead-letters
 * nothing itself): on the max-deliveries advisory of a job stream, the job still in the stream
 * is published as a dead letter (as by `supervisor`, deduplicated with what its worker would
 * have published) and deleted from the queue. A job its worker gave up on itself was already
 * acknowledged, so it is not found here and nothing happens. An advisory is not kept: one sent
 * while the supervisor is down is missed, and its job stays in the queue (`jobs ls` counts it).
 */
export function watchLastDeliveries(nc: NatsConnection, jsm: JetStreamManager, queues: readonly string[], names: FleetNames, logger: Logger): Subscription {
  const byStream = new Map(queues.map((q) => [names.jobStream(q), q]));
  const js = jetstream(nc);
  return nc.subscribe(MAX_DELIVERIES, {
    callback: (err, msg) => {
      if (err) return;
      const advisory = AdvisorySchema.safeParse(parseJsonOrUndefined(msg.string()));
      const queue = advisory.success ? byStream.get(advisory.data.stream) : undefined;
      if (!advisory.success || queue === undefined) return;
      const { stream, consumer, stream_seq: seq, deliveries } = advisory.data;
      void (async () => {
        const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
        if (!m) return;
        const job = JobSchema.safeParse(parseJsonOrUndefined(m.string()));
        const id = job.success ? job.data.id : `seq-${seq}`;
        const letter: DeadLetter = {
          job: job.success ? job.data : m.string().slice(0, 2000),
          queue,
          skill: consumer.replace(/^skill_/, ''),
          reason: { code: ErrorCode.TIMEOUT, message: `its worker did not finish it on the last of ${deliveries} deliveries (it stopped or went silent past ackWaitMs)` },
          attempts: deliveries,
          agent: 'supervisor',
          at: new Date().toISOString(),
        };
        await js.publish(names.deadLetters(queue), JSON.stringify(letter), { msgID: deadLetterId(id, seq) });
        await jsm.streams.deleteMessage(stream, seq, false);
        logger.warn({ job: id, queue, attempts: deliveries }, 'job given up after its last delivery went unanswered: a dead letter');
      })().catch((e: unknown) => logger.error({ err: e, stream, seq }, 'could not dead-letter a job past its last delivery'));
    },
  });
}
