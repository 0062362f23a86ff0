import { type ConsumerMessages, jetstream, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';

import type { EventsSettings } from '../../shared/config/index.js';
import { type DomainSchema, type HeardEvent, hearsEvent, type Listener } from '../../shared/domain/index.js';
import { consumeLong, ensureRouterConsumer } from '../../shared/nats/index.js';
import { type Logger, withDeadline } from '../../shared/platform/index.js';
import {
  eventMemoryText,
  type FleetNames,
  type HeardHints,
  hintHeaders,
  parseJsonOrUndefined,
  type WorldEvent,
  WorldEventSchema,
} from '../../shared/protocol/index.js';
export interface EventRouterOptions {
  nc: NatsConnection;
  names: FleetNames;
  domain: DomainSchema;
  settings: Pick<EventsSettings, 'ack_wait_s'>;
  /** The agents that keep what they hear now: registered and not Archived. */
  hearers: () => readonly string[];
  /** Where an agent is now (its `sameLocation` filters compare the event's location with it). */
  locationOf: (id: string) => string | null;
  /**
   * What the fleet's concept and embedding services make of an event's memory text, sent with
   * each copy so that its hearers ask neither (undefined: copies carry no hints).
   */
  hints?: (text: string) => Promise<HeardHints>;
  /** Told the hearers of each event once its copies are stored. */
  onRouted?: (hearers: readonly string[]) => void;
  logger: Logger;
}

/** How long a copy waits for its hints; past it, copies go without and hearers ask the services. */
const HINTS_WAIT_MS = 200;

/** Events routed at once; the next waits until one of them is copied to all its hearers. */
const IN_FLIGHT = 256;

/**
 * Reads the event stream once, with its own durable consumer, and copies each event to the
 * heard subject of every agent whose filters let it hear it — evaluated here with the agent's
 * current location — so an agent spends nothing on the events it does not hear. Each copy's
 * JetStream message id is `<event id>:<agent id>`, so a copy published twice (the supervisor
 * killed before it acknowledged the event) is stored once; an event is acknowledged only once
 * every copy is stored, so nothing is lost. While no supervisor runs, events wait in the
 * router's consumer and are routed, in order, when one starts. An agent's copies are published
 * in the order of the events; a copy that fails to publish is published again after the
 * consumer's ack wait, and may then arrive after later ones. Copies carry the event's concepts
 * and vector as headers when the supervisor serves them (`heard-hints`), found once per event.
 */
export class EventRouter {
  readonly #o: EventRouterOptions;
  readonly #js: JetStreamClient;
  #messages: ConsumerMessages | undefined;
  #inFlight = new Set<Promise<void>>();
  /** Events taken from the stream so far: one taken after the event being copied means a burst. */
  #taken = 0;
  /** The last event whose copies are being published: the next one's wait for it, so that copies keep the events' order. */
  #tail: Promise<unknown> = Promise.resolve();
  #done: Promise<void> = Promise.resolve();

  private constructor(options: EventRouterOptions) {
    this.#o = options;
    this.#js = jetstream(options.nc);
  }

  /** Creates the router's consumer (the first time) and starts routing. */
  static async start(options: EventRouterOptions): Promise<EventRouter> {
    const router = new EventRouter(options);
    await ensureRouterConsumer(await router.#js.jetstreamManager(), options.settings, options.names);
    const consumer = await router.#js.consumers.get(options.names.eventStream, options.names.routerConsumer);
    router.#messages = await consumeLong(consumer, { max_messages: IN_FLIGHT }, options.logger, 'router');
    router.#done = router.#run(router.#messages);
    return router;
  }

  /** Whom an event reaches: the hearers whose filters match it where they are now. */
  #hearersOf(event: HeardEvent): string[] {
    const { domain } = this.#o;
    return this.#o.hearers().filter((id) => {
      const listener = this.#listener(id);
      return listener !== undefined && hearsEvent(domain.eventFilters, listener, event);
    });
  }

  /** Stops taking events; copies already on their way finish. */
  async close(): Promise<void> {
    await this.#messages?.close();
    await this.#done;
    await Promise.allSettled(this.#inFlight);
  }

  async #run(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const m of messages) {
        if (this.#inFlight.size >= IN_FLIGHT) await Promise.race(this.#inFlight);
        const routed = this.#route(m, ++this.#taken);
        this.#inFlight.add(routed);
        void routed.finally(() => this.#inFlight.delete(routed));
      }
    } catch (err) {
      this.#o.logger.warn({ err }, 'event router stopped');
    }
  }

  /**
   * Publishes the copies of one event once its hints are found and the previous event's copies
   * are on their way (so an agent's copies keep the events' order), and acknowledges it once all
   * are stored.
   */
  async #route(m: JsMsg, nth: number): Promise<void> {
    const parsed = WorldEventSchema.safeParse(parseJsonOrUndefined(m.string()));
    if (!parsed.success) {
      // publishWorldEvent validates; this came from elsewhere. Nobody can hear it.
      this.#o.logger.warn({ subject: m.subject, seq: m.seq }, 'malformed event not routed');
      m.ack();
      return;
    }
    const event = parsed.data;
    // An agent's events come on its own subject, where only it may publish: their source is it.
    // Anything else the stream holds (a message JetStream delivered to an event subject for a pull
    // that named it keeps its first subject) is nobody's event.
    const publisher = this.#o.names.eventPublisher(m.subject);
    if (publisher === undefined && !m.subject.startsWith(this.#o.names.event(''))) {
      this.#o.logger.warn({ subject: m.subject, seq: m.seq }, 'event not routed: it did not come on an event subject');
      m.ack();
      return;
    }
    if (publisher !== undefined && event.source !== publisher) {
      this.#o.logger.warn(
        { subject: m.subject, seq: m.seq, source: event.source },
        'event not routed: its source is not the agent whose subject it came on',
      );
      m.ack();
      return;
    }
    const hearers = this.#hearersOf(event);
    const hints = hearers.length > 0 ? this.#hintsOf(event) : undefined;
    const published = this.#tail.then(async () => {
      // Later events already taken or waiting: the copies say so, and hearers gather them into one batch.
      const headers = this.#headers(await hints, this.#taken > nth || m.info.pending > 0);
      return hearers.map((id) =>
        this.#js.publish(this.#o.names.agentHeard(id), m.data, { msgID: `${event.id}:${id}`, ...(headers ? { headers } : {}) }),
      );
    });
    // A failure here is this event's alone: the next event's copies still go.
    this.#tail = published.catch(() => undefined);
    try {
      await Promise.all(await published);
      m.ack();
      if (hearers.length > 0) this.#o.onRouted?.(hearers);
    } catch (err) {
      this.#o.logger.error({ err, event: event.id, seq: m.seq }, 'event not routed; it will be routed again after the ack wait');
    }
  }

  /** The event's hints, or none when finding them fails or takes longer than HINTS_WAIT_MS. */
  async #hintsOf(event: WorldEvent): Promise<HeardHints | undefined> {
    const find = this.#o.hints;
    if (!find) return undefined;
    const found = find(eventMemoryText(event)).catch((err: unknown) => void this.#o.logger.debug({ err }, 'event hints not found'));
    return withDeadline(found, HINTS_WAIT_MS, () => undefined);
  }

  /** The headers of an event's copies; hints that cannot be sent are left out rather than holding the copies up. */
  #headers(hints: HeardHints | undefined, more: boolean): MsgHdrs | undefined {
    try {
      return hintHeaders(hints ?? {}, more);
    } catch (err) {
      this.#o.logger.debug({ err }, 'event hints left out');
      return undefined;
    }
  }

  #listener(id: string): Listener | undefined {
    const def = this.#o.domain.agents[id];
    if (!def) return undefined;
    return { id, name: def.persona.name, tags: def.tags, aliases: def.aliases, location: this.#o.locationOf(id) };
  }
}
