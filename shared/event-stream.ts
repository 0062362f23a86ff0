import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, ThymosError } from './errors.js';
import type { EventsSettings } from './thymos-config.js';
import { agentConsumerName, EVENT_STREAM, EVENT_SUBJECTS, eventSubject, type WorldEvent } from './world-event.js';

const NS_PER_MS = 1_000_000;
const CONSUMER_NOT_FOUND = 10014;
const STREAM_NOT_FOUND = 10059;

const isApiError = (err: unknown, code: number) => err instanceof JetStreamApiError && err.code === code;

/**
 * Creates the event stream, or brings its limits in line with `[events]`. Uses only what
 * nats-server 2.9 has: one subject filter per consumer, no compression, no transforms.
 */
export async function ensureEventStream(nc: NatsConnection, settings: EventsSettings): Promise<JetStreamManager> {
  const jsm = await jetstreamManager(nc);
  const config = {
    subjects: [EVENT_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: settings.max_age_s * 1000 * NS_PER_MS,
    max_bytes: settings.max_bytes,
    duplicate_window: settings.duplicate_window_s * 1000 * NS_PER_MS,
  };
  try {
    const info = await jsm.streams.info(EVENT_STREAM);
    const c = info.config;
    if (c.max_age !== config.max_age || c.max_bytes !== config.max_bytes || c.duplicate_window !== config.duplicate_window) {
      await jsm.streams.update(EVENT_STREAM, { max_age: config.max_age, max_bytes: config.max_bytes, duplicate_window: config.duplicate_window });
    }
  } catch (err) {
    if (!isApiError(err, STREAM_NOT_FOUND)) throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `JetStream: ${(err as Error).message} (is JetStream enabled on the server? nats-server -js)`, { cause: err });
    await jsm.streams.add({ name: EVENT_STREAM, ...config });
  }
  return jsm;
}

/**
 * The agent's durable consumer on the event stream: explicit acks, one subject filter
 * (2.9 has no filter lists; which events an agent hears is decided by the agent), and
 * delivery from its creation on. It keeps what arrives while the agent is Dormant.
 */
export async function ensureAgentConsumer(jsm: JetStreamManager, id: string, settings: Pick<EventsSettings, 'ack_wait_s'>): Promise<void> {
  const name = agentConsumerName(id);
  try {
    await jsm.consumers.info(EVENT_STREAM, name);
  } catch (err) {
    if (!isApiError(err, CONSUMER_NOT_FOUND)) throw err;
    await jsm.consumers.add(EVENT_STREAM, {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
      filter_subject: EVENT_SUBJECTS,
      ack_wait: settings.ack_wait_s * 1000 * NS_PER_MS,
      max_ack_pending: 10_000,
    });
  }
}

/** Deletes an agent's consumer: an Archived agent stops retaining events. No-op if absent. */
export async function deleteAgentConsumer(jsm: JetStreamManager, id: string): Promise<void> {
  try {
    await jsm.consumers.delete(EVENT_STREAM, agentConsumerName(id));
  } catch (err) {
    if (!isApiError(err, CONSUMER_NOT_FOUND)) throw err;
  }
}

/** Publishes an event into the stream; resolves once JetStream has stored it (or dropped a duplicate id). */
export async function publishWorldEvent(nc: NatsConnection, event: WorldEvent): Promise<{ seq: number; duplicate: boolean }> {
  try {
    const ack = await jetstream(nc).publish(eventSubject(event.type), JSON.stringify(event), { msgID: event.id });
    return { seq: ack.seq, duplicate: ack.duplicate };
  } catch (err) {
    throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `publishing ${event.type} failed: ${(err as Error).message} (is the fleet up? its supervisor creates the event stream)`, { cause: err });
  }
}
