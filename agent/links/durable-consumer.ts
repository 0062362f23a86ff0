import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';

import type { Logger } from '../../shared/platform/logger.js';

/**
 * Takes what waits on a durable consumer, in order, a batch at a time, until nothing is
 * pending (or `stopped()` says so). `handle` acknowledges what it has stored. Returns how
 * many messages it took.
 */
export async function readPending(consumer: Consumer, batch: number, handle: (msgs: JsMsg[]) => Promise<void>, stopped: () => boolean): Promise<number> {
  let taken = 0;
  while (!stopped()) {
    const pending = (await consumer.info()).num_pending;
    if (pending === 0) break;
    const msgs: JsMsg[] = [];
    for await (const m of await consumer.fetch({ max_messages: Math.min(batch, pending), expires: 2000 })) msgs.push(m);
    if (msgs.length === 0) break;
    await handle(msgs);
    taken += msgs.length;
  }
  return taken;
}

/**
 * Then keeps taking, one message at a time and in order, until the returned stream is
 * closed. A message whose handling fails is left unacknowledged: JetStream delivers it again.
 */
export async function readForever(consumer: Consumer, batch: number, handle: (m: JsMsg) => Promise<void>, logger: Logger, what: string): Promise<ConsumerMessages> {
  const messages = await consumer.consume({ max_messages: batch });
  void (async () => {
    for await (const m of messages) {
      await handle(m).catch((err: unknown) => logger.error({ err, seq: m.seq }, `${what} not handled; it will be redelivered`));
    }
  })().catch((err: unknown) => logger.warn({ err }, `${what} consumer stopped`));
  return messages;
}
