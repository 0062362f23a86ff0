import { type Consumer, type ConsumerMessages, jetstream, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import { ensureAgentConsumer, ownDelivery } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  eventMemoryText,
  type FleetNames,
  moreFollows,
  parseJsonOrUndefined,
  readHints,
  type WorldEvent,
  WorldEventSchema,
} from '../../shared/protocol/index.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { Hearing } from '../runtime/runtime-ports.js';
import { readForever, readPending } from './durable-consumer.js';
import type { HintBook } from './hint-book.js';

export interface AgentEventListenerOptions {
  /** Most missed events replayed on wake; older ones are acknowledged unread. */
  replayMax: number;
  /** Redelivery delay of an unacknowledged event, used when the consumer is created. */
  ackWaitS: number;
  /** The fleet's stream and consumer names. */
  names: FleetNames;
  /** Where the concepts and vector a copy carries go, for the extractor and embedder to take. */
  hints?: HintBook;
  /** A live event is recallable at once and stored within this (0: stored first); acknowledged once stored. */
  storeDelayMs?: number;
}

const BATCH = 256;
/**
 * A copy the router made while later events waited (a burst) waits up to this for them, so that a
 * burst is heard in a few batches (one write, one index pass, one notification each) rather than
 * one event at a time. A lone event, or the last of a burst, waits for nothing.
 */
const BURST_GATHER_MS = 25;

/**
 * An agent's ear on the world: its durable JetStream consumer on the heard stream, where the
 * supervisor's router puts each event the agent's filters let it hear (so an agent spends
 * nothing on the events it does not hear). On start it replays what arrived while it was
 * stopped, in order; then it keeps listening. Heard events become
 * memories whose id derives from the event id, and a message is acknowledged only after
 * its memory is stored — so a redelivery (a crash mid-replay) never makes a second memory
 * and a crash never loses one.
 */
export class AgentEventListener {
  readonly #runtime: Hearing;
  readonly #options: AgentEventListenerOptions;
  readonly #logger: Logger;
  #consumer: Consumer | undefined;
  #messages: ConsumerMessages | undefined;
  #closed = false;
  heard = 0;

  constructor(runtime: Hearing, options: AgentEventListenerOptions, logger: Logger) {
    this.#runtime = runtime;
    this.#options = options;
    this.#logger = logger;
  }

  /** Binds the consumer (creating it the first time) and replays every pending event. */
  async catchUp(nc: NatsConnection): Promise<{ replayed: number; skipped: number }> {
    const js = jetstream(nc);
    await ensureAgentConsumer(await js.jetstreamManager(), this.#runtime.id, { ack_wait_s: this.#options.ackWaitS }, this.#options.names);
    const consumer = await js.consumers.get(this.#options.names.heardStream, this.#options.names.heardConsumer(this.#runtime.id));
    this.#consumer = consumer;
    let skipped = 0;
    let toSkip = Math.max(0, (await consumer.info()).num_pending - this.#options.replayMax);
    const taken = await readPending(
      consumer,
      BATCH,
      async (delivered) => {
        const msgs = this.#own(delivered);
        const skip = msgs.slice(0, toSkip);
        for (const m of skip) m.ack();
        toSkip -= skip.length;
        skipped += skip.length;
        await this.#hear(msgs.slice(skip.length));
      },
      () => this.#closed,
    );
    const replayed = taken - skipped;
    return { replayed, skipped };
  }

  /** Listens from now on, in order, until closed. Call after `catchUp`. */
  start(): void {
    const consumer = this.#consumer;
    if (!consumer || this.#closed) return;
    readForever(consumer, BATCH, (msgs) => this.#hear(msgs, true), this.#logger, 'event', {
      ms: BURST_GATHER_MS,
      more: (m) => moreFollows(m.headers),
    }).then(
      (messages) => {
        this.#messages = messages;
        if (this.#closed) void messages.close();
      },
      (err: unknown) => this.#logger.warn({ err }, 'event consumer not started'),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#messages?.close().catch(() => undefined);
  }

  /** What its own heard consumer delivered: another agent may aim its deliveries at this pull's inbox (`ownDelivery`); those are dropped, unacknowledged. */
  #own(msgs: readonly JsMsg[]): JsMsg[] {
    const { names } = this.#options;
    const own = msgs.filter((m) =>
      ownDelivery(m, names.heardStream, names.heardConsumer(this.#runtime.id), names.agentHeard(this.#runtime.id)),
    );
    if (own.length < msgs.length)
      this.#logger.warn({ dropped: msgs.length - own.length }, "messages not delivered by this agent's heard consumer dropped");
    return own;
  }

  /** `live`: heard as it happened, not replayed at start-up; only live events are reasoned about. */
  async #hear(delivered: readonly JsMsg[], live = false): Promise<void> {
    const msgs = this.#own(delivered);
    const memories: NewMemory[] = [];
    const again = msgs.filter((m) => m.redelivered);
    if (again.length > 0)
      this.#logger.info(
        { events: again.length, first: again[0]!.seq, deliveries: again[0]!.info.deliveryCount },
        'events delivered again (not acknowledged in time)',
      );
    for (const m of msgs) {
      const parsed = WorldEventSchema.safeParse(parseJsonOrUndefined(m.string()));
      if (!parsed.success) {
        this.#logger.warn({ subject: m.subject, seq: m.seq }, 'malformed event ignored');
        continue;
      }
      const memory = toMemory(parsed.data);
      this.#options.hints?.put(memory.content, readHints(m.headers));
      memories.push(memory);
    }
    const delay = live ? (this.#options.storeDelayMs ?? 0) : 0;
    // Between half the delay and all of it, at random: agents that hear the same events do not all write at once.
    if (memories.length > 0)
      await this.#runtime.hear(memories, delay > 0 ? { live, storeWithinMs: delay * (0.5 + Math.random() / 2) } : { live });
    this.heard += memories.length;
    if (delay === 0) {
      for (const m of msgs) m.ack();
      return;
    }
    // Acknowledged once stored: a crash before that has them delivered again, and the memory ids keep them one each.
    this.#runtime.stored().then(
      () => {
        for (const m of msgs) m.ack();
      },
      (err: unknown) =>
        this.#logger.warn(
          { err: (err as Error).message, events: msgs.length },
          'heard events not stored before closing; they will be delivered again',
        ),
    );
  }
}

function toMemory(e: WorldEvent): NewMemory {
  const importance =
    typeof e.payload.importance === 'number' && e.payload.importance >= 0 && e.payload.importance <= 1 ? e.payload.importance : 0.5;
  return {
    id: `ev-${e.id}`,
    content: eventMemoryText(e),
    importance,
    tags: [...new Set(['event', e.type, ...e.tags])].slice(0, 32),
    source: { kind: 'event', by: e.source, event: e.id },
    occurred_at: Date.parse(e.ts),
  };
}
