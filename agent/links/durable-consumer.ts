import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';

import { consumeLong, LONG_PULL, type PullTiming } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';

/**
 * Takes what waits on a durable consumer, in order, a batch at a time, until nothing is
 * pending (or `stopped()` says so). `handle` acknowledges what it has stored. Returns how
 * many messages it took.
 */
export async function readPending(
  consumer: Consumer,
  batch: number,
  handle: (msgs: JsMsg[]) => Promise<void>,
  stopped: () => boolean,
): Promise<number> {
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

/** Waiting for the rest of a burst: at most `ms` for a batch, while its newest message says more follow. */
export interface Gathering {
  ms: number;
  more: (m: JsMsg) => boolean;
}

/**
 * Then keeps taking, in order, until the returned stream is closed. What arrives while a batch
 * is being handled is handled next as one batch (up to `batch`): a burst costs one `handle` per
 * batch rather than per message, and a lone message waits for nothing. With `gather`, a batch
 * whose newest message says more follow waits up to `gather.ms` for them. Messages of a batch
 * whose handling fails are left unacknowledged: JetStream delivers them again. Pulls are made
 * with `timing` (LONG_PULL: see there why).
 */
export async function readForever(
  consumer: Consumer,
  batch: number,
  handle: (msgs: JsMsg[]) => Promise<void>,
  logger: Logger,
  what: string,
  gather?: Gathering,
  timing: PullTiming = LONG_PULL,
): Promise<ConsumerMessages> {
  const messages = await consumeLong(consumer, { max_messages: batch }, logger, what, timing);
  const waiting: JsMsg[] = [];
  let running: Promise<void> | undefined;
  let arrived: (() => void) | undefined;
  /** Resolves when the next message arrives or after `ms`. */
  const nextArrival = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      arrived = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const drain = async () => {
    // One turn of the event loop first, so that messages already received join the first batch.
    await new Promise((resolve) => setImmediate(resolve));
    while (waiting.length > 0) {
      if (gather) {
        const until = performance.now() + gather.ms;
        while (waiting.length < batch && gather.more(waiting.at(-1)!) && performance.now() < until)
          await nextArrival(until - performance.now());
        arrived = undefined;
      }
      const msgs = waiting.splice(0, batch);
      await handle(msgs).catch((err: unknown) =>
        logger.error({ err, seqs: [msgs[0]!.seq, msgs.at(-1)!.seq] }, `${what} not handled; it will be redelivered`),
      );
    }
    running = undefined;
  };
  void (async () => {
    for await (const m of messages) {
      waiting.push(m);
      arrived?.();
      running ??= drain();
      // A full batch waits for the one being handled: what is read ahead stays bounded.
      if (waiting.length >= batch) await running;
    }
  })().catch((err: unknown) => logger.warn({ err }, `${what} consumer stopped`));
  return messages;
}
