import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import type { StreamReplicas } from '../config/cluster-settings.js';
import { type EventsSettings } from '../config/fleet-settings.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import type { AgentMessage } from '../protocol/agent-message.js';
import { DEFAULT_FLEET_NAMES, type FleetNames } from '../protocol/fleet-names.js';
import type { WorldEvent } from '../protocol/world-event.js';
import { ApiErrorCode, isApiError } from './api-error.js';
import { placeStream, type PublishOptions, updateStream } from './stream-replicas.js';

const NS_PER_MS = 1_000_000;

/**
 * Creates the event stream, the heard stream (each event copied once per agent that hears it)
 * and the agents' inbox stream, each kept on `replicas` nodes (`[cluster] replicas`), or brings
 * their limits and replicas in line. Uses only what nats-server 2.9 has: one subject filter per
 * consumer, no compression, no transforms. The heard stream keeps a copy only while its agent's
 * consumer has not acknowledged it (interest retention), so copies do not pile up beside the
 * events themselves. The consumers on them are kept on as many nodes as their stream.
 */
export async function ensureEventStream(
  nc: NatsConnection,
  settings: EventsSettings,
  names: FleetNames = DEFAULT_FLEET_NAMES,
  replicas: StreamReplicas = 1,
): Promise<JetStreamManager> {
  const jsm = await jetstreamManager(nc);
  const limits = {
    max_age: settings.max_age_s * 1000 * NS_PER_MS,
    max_bytes: settings.max_bytes,
    duplicate_window: settings.duplicate_window_s * 1000 * NS_PER_MS,
  };
  for (const [name, subjects, retention] of [
    [names.eventStream, [names.allEvents, names.allAgentEvents], RetentionPolicy.Limits],
    [names.heardStream, [names.allHeard], RetentionPolicy.Interest],
    [names.inboxStream, [names.allInboxes], RetentionPolicy.Limits],
  ] as const) {
    let c: StreamConfig;
    try {
      c = (await jsm.streams.info(name)).config;
    } catch (err) {
      if (!isApiError(err, ApiErrorCode.StreamNotFound))
        throw new ThymosError(
          ErrorCode.NATS_UNAVAILABLE,
          `JetStream: ${(err as Error).message} (is JetStream enabled on the server? nats-server -js)`,
          { cause: err },
        );
      await placeStream(
        jsm.streams.add({ name, ...limits, num_replicas: replicas, storage: StorageType.File, retention, subjects: [...subjects] }),
        name,
        replicas,
      );
      continue;
    }
    // Subjects are brought in line as the limits are: what the stream keeps stays, and the
    // consumers that read it still read it.
    const sameSubjects = c.subjects.length === subjects.length && subjects.every((s) => c.subjects.includes(s));
    if (
      c.max_age !== limits.max_age ||
      c.max_bytes !== limits.max_bytes ||
      c.duplicate_window !== limits.duplicate_window ||
      c.num_replicas !== replicas ||
      !sameSubjects
    ) {
      await updateStream(jsm, name, c, replicas, { ...limits, subjects: [...subjects] });
    }
  }
  return jsm;
}

/**
 * The agent's durable consumers: on the heard stream (the events the router found it hears)
 * and on the inbox stream, with explicit acks and delivery from their creation on. They keep
 * what arrives while the agent is Dormant; the supervisor creates them when it registers the
 * agent (an Archived agent has none).
 */
export async function ensureAgentConsumer(
  jsm: JetStreamManager,
  id: string,
  settings: Pick<EventsSettings, 'ack_wait_s'>,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<void> {
  await ensureConsumer(jsm, names.heardStream, names.heardConsumer(id), names.agentHeard(id), settings);
  await ensureConsumer(jsm, names.inboxStream, names.inboxConsumer(id), names.agentInboxes(id), settings);
}

/**
 * The router's durable consumer on the event stream, reading all of it (the client's and the
 * agents' event subjects). Created with the fleet's first supervisor, it routes every event
 * published from then on; while no supervisor runs, events wait in it.
 */
export async function ensureRouterConsumer(
  jsm: JetStreamManager,
  settings: Pick<EventsSettings, 'ack_wait_s'>,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<void> {
  await ensureConsumer(jsm, names.eventStream, names.routerConsumer, undefined, settings);
}

const consumerLimits = (settings: Pick<EventsSettings, 'ack_wait_s'>) => ({
  ack_policy: AckPolicy.Explicit,
  ack_wait: settings.ack_wait_s * 1000 * NS_PER_MS,
  max_ack_pending: 10_000,
});

/** A durable consumer on `stream` that delivers from its creation on, made unless it exists; `filter` undefined reads all of the stream. */
async function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  name: string,
  filter: string | undefined,
  settings: Pick<EventsSettings, 'ack_wait_s'>,
): Promise<void> {
  try {
    await jsm.consumers.info(stream, name);
  } catch (err) {
    if (!isApiError(err, ApiErrorCode.ConsumerNotFound)) throw err;
    await jsm.consumers.add(stream, {
      durable_name: name,
      deliver_policy: DeliverPolicy.New,
      ...(filter === undefined ? {} : { filter_subject: filter }),
      ...consumerLimits(settings),
    });
  }
}

/** Deletes an agent's consumer: an Archived agent stops retaining events. No-op if absent. */
export async function deleteAgentConsumer(jsm: JetStreamManager, id: string, names: FleetNames = DEFAULT_FLEET_NAMES): Promise<void> {
  for (const [stream, name] of [
    [names.heardStream, names.heardConsumer(id)],
    [names.inboxStream, names.inboxConsumer(id)],
  ] as const) {
    try {
      await jsm.consumers.delete(stream, name);
    } catch (err) {
      if (!isApiError(err, ApiErrorCode.ConsumerNotFound)) throw err;
    }
  }
}

/**
 * Puts a message in the addressee's inbox, on the subject of its sender (`message.from`, who
 * alone may publish there); it waits while the addressee is stopped. Sent twice (a retry after
 * a lost acknowledgement), it is kept once within the stream's duplicate window, and its
 * addressee remembers it once after that (a message's memory id is its id).
 */
export async function sendAgentMessage(nc: NatsConnection, message: AgentMessage, names: FleetNames = DEFAULT_FLEET_NAMES): Promise<void> {
  try {
    await jetstream(nc).publish(names.agentInbox(message.to, message.from), JSON.stringify(message), { msgID: message.id });
  } catch (err) {
    throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `message to ${message.to} not sent: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Publishes an event into the stream; resolves once JetStream has stored it (or dropped a
 * duplicate id). An agent (`agent`) publishes on its own subject, as its own `source`. Tried
 * `options.attempts` times while no stream answers, under the event's id each time.
 */
export async function publishWorldEvent(
  nc: NatsConnection,
  event: WorldEvent,
  names: FleetNames = DEFAULT_FLEET_NAMES,
  agent?: string,
  options: PublishOptions = {},
): Promise<{ seq: number; duplicate: boolean }> {
  try {
    const subject = agent === undefined ? names.event(event.type) : names.agentEvent(agent, event.type);
    const ack = await jetstream(nc).publish(subject, JSON.stringify(event), { msgID: event.id, retries: options.attempts ?? 1 });
    return { seq: ack.seq, duplicate: ack.duplicate };
  } catch (err) {
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `publishing ${event.type} failed: ${(err as Error).message} (is the fleet up? its supervisor creates the event stream)`,
      { cause: err },
    );
  }
}
