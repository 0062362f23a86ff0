import type { ConsumeOptions, Consumer, ConsumerMessages } from '@nats-io/jetstream';

import type { Logger } from '../platform/logger.js';

/** How long one pull request lives, and how often the server says it is still there. */
export interface PullTiming {
  /** ms a pull request waits at the server before it expires and the client pulls again. */
  expires: number;
  /** ms between the server's idle heartbeats; two missed make the client pull again. */
  idle_heartbeat: number;
}

/**
 * The timing of the fleet's long-lived pulls: the router's consumer and each agent's event and
 * inbox consumers. nats-server 2.9 drops a pull request that has just expired, when a message
 * comes in before its expiry is processed, without a word (no 408): the client still counts on
 * the request and pulls again only after two missed idle heartbeats, while that message waits.
 * With the client's default 30 s pulls this struck about one expiry in three hundred while events
 * came every 100 ms (two hearers in 3 of 11 runs of 80 events to 50 agents, each waiting 30 s).
 * A pull that lives an hour expires 120 times less often; heartbeats stay every 15 s, so an idle
 * consumer costs what it did (heartbeats every 2 s bounded the wait to 4–6 s but doubled the CPU
 * of 50 idle agents, 3–4 % → 9 % of a core).
 */
export const LONG_PULL: PullTiming = { expires: 3_600_000, idle_heartbeat: 15_000 };

/** Reported by the consumer: pulls made (`next`) and heartbeats are routine; what is not is logged. */
const ROUTINE = new Set(['next', 'heartbeat', 'discard', 'debug', 'flow_control']);

/**
 * Starts consuming with `timing` and logs what the consumer reports beyond routine: a pull the
 * server dropped (heartbeats missed: the client pulls again), or a consumer or stream gone.
 */
export async function consumeLong(
  consumer: Consumer,
  options: Pick<ConsumeOptions, 'max_messages'>,
  logger: Logger,
  what: string,
  timing: PullTiming = LONG_PULL,
): Promise<ConsumerMessages> {
  const messages = await consumer.consume({ ...options, expires: timing.expires, idle_heartbeat: timing.idle_heartbeat });
  void (async () => {
    for await (const notice of messages.status()) {
      if (ROUTINE.has(notice.type)) continue;
      if (notice.type === 'heartbeats_missed')
        logger.info({ missed: notice.count }, `${what} consumer: no heartbeat from its pull at the server; pulling again`);
      else logger.warn({ notice }, `${what} consumer: ${notice.type}`);
    }
  })().catch(() => undefined);
  return messages;
}
