import type { NatsConnection } from '@nats-io/transport-node';
import pRetry, { AbortError } from 'p-retry';

import { agentIdentity, fleetNatsLink } from '../../shared/nats/index.js';
import type { CleanupStack, Logger } from '../../shared/platform/index.js';
import { FleetNames, parseAgentEvent } from '../../shared/protocol/index.js';
import type { AgentControlChannel } from '../links/agent-control-channel.js';
import { HintBook } from '../links/hint-book.js';
import type { DeliveryNotes } from '../links/job-deliveries.js';
import type { LeaseFence } from '../links/lease-fence.js';
import type { SharedConceptExtractor } from '../links/shared-concept-extractor.js';
import type { AgentMemory } from '../memory/agent-memory.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';
import type { ToolCaller } from '../tools/tool-caller.js';
import type { AgentSetup } from './agent-setup.js';

/** What `linkToFleet` needs from the agent being started. */
export interface FleetLinkOptions {
  /** Its world watches and work come from here. */
  setup: AgentSetup;
  /** The NATS server or cluster to link to (`[nats] url`, or what the supervisor passed). */
  natsUrl: string;
  /** The control channel's module, loading since the process began. */
  channelModule: Promise<typeof import('../links/agent-control-channel.js')>;
  runtime: AgentRuntime;
  memory: AgentMemory;
  /** The agent's concept extractor, linked to the fleet's concept service once NATS is there. */
  concepts: SharedConceptExtractor;
  /** Its declared tools: their pending calls go to the supervisor's approvals, decisions come back on the control channel. */
  tools: ToolCaller;
  /** Where it notes the deliveries of the jobs it is handed (its database; see `JobDeliveries`). */
  deliveryNotes: DeliveryNotes;
  logger: Logger;
  cleanup: CleanupStack;
  /** Marks a start-up phase for the ready log line. */
  phase: (name: string) => void;
  /** Called for a `shutdown` control request, after the reply is sent. */
  onShutdown: () => void;
  /** True once the agent is stopping: background retries end. */
  stopping: () => boolean;
  /** Its lease's fence (placement by lease): every NATS message in and out checks it, and its supervisor's extensions move it. */
  fence?: LeaseFence | undefined;
}

/** The agent's links to the fleet, once made: its control channel and the readers to close at stop. */
export interface FleetLinks {
  channel: AgentControlChannel;
  listeners: Array<{ close(): Promise<void> }>;
}

/**
 * Links a starting agent to its fleet over NATS: control and heartbeats first (waiting at
 * most `[agent] nats_wait_ms`), then its event consumer (replaying what it missed), its
 * inbox, its world watches, its work from the queues (`JobWorker`) and the embedding and concept services (the concept service is
 * linked before the replay, so that what the replay hands over is extracted there). When
 * NATS or JetStream is not there yet the agent still starts; the links are made in the
 * background, step by step, retried from 1 s doubling to 30 s, never starting a reader twice.
 */
export async function linkToFleet(parts: FleetLinkOptions): Promise<FleetLinks> {
  const { setup, runtime, logger, cleanup, phase, onShutdown, stopping } = parts;
  const { config } = setup;
  const listeners: Array<{ close(): Promise<void> }> = [];
  const names = new FleetNames(config.fleet.name);
  const { AgentControlChannel } = await parts.channelModule;
  const channel = new AgentControlChannel(
    runtime,
    {
      servers: parts.natsUrl,
      link: fleetNatsLink(config, agentIdentity(runtime.id), parts.natsUrl),
      names,
      heartbeatMs: config.agent.heartbeat_ms,
      onShutdown,
      decideCall: (id, decision) => parts.tools.decide(id, decision),
      toolCalls: () => parts.tools.counts(),
      token: setup.ownershipToken,
      fence: parts.fence,
    },
    logger,
  );
  cleanup.push(() => channel.close());
  const linked = await channel.waitUntilConnected(config.agent.nats_wait_ms);
  if (!linked) logger.warn({ url: parts.natsUrl }, 'nats not reachable yet; serving MCP and reconnecting in the background');
  phase('nats');
  const readers = await openReaders(parts, names, listeners);
  const listen = await linkingSteps(parts, { channel, names, readers, listeners });
  const listenUntilDone = () => retryUntilDone(listen, stopping, logger);
  if (linked) {
    await listen().catch((err: unknown) => {
      logger.warn(
        { err: (err as Error).message },
        'world events unavailable (JetStream off or recovering, or no event stream yet); retrying in the background',
      );
      void listenUntilDone();
    });
    phase('replay');
  } else {
    void listenUntilDone();
  }
  return { channel, listeners };
}

/**
 * The links made once NATS answers, as one run that can be tried again: events (replaying what
 * was missed), inbox, world, approvals, jobs and the embedder. Each step runs once: a retry after
 * a failure (JetStream still recovering after a broker restart, say) picks up at the step that
 * failed, never starting a reader twice.
 */
async function linkingSteps(
  parts: FleetLinkOptions,
  linked: {
    channel: AgentControlChannel;
    names: FleetNames;
    readers: Awaited<ReturnType<typeof openReaders>>;
    listeners: Array<{ close(): Promise<void> }>;
  },
): Promise<() => Promise<void>> {
  const { setup, runtime, memory, logger } = parts;
  const { config, id } = setup;
  const { channel, names, listeners } = linked;
  const { ear, inbox, watcher, hints } = linked.readers;
  const { WorldClient } = await import('../../shared/nats/index.js');
  const done = new Set<string>();
  const once = async (step: string, run: () => Promise<void>) => {
    if (done.has(step)) return;
    await run();
    done.add(step);
  };
  return async () => {
    const nc = await channel.connection();
    parts.concepts.link(nc, names, hints);
    await once('events', async () => {
      const { replayed, skipped } = await ear.catchUp(nc);
      if (replayed || skipped) logger.info({ replayed, skipped }, 'missed events replayed');
      ear.start();
    });
    await once('inbox', async () => {
      const taken = await inbox.open(nc);
      if (taken) logger.info({ taken }, 'waiting messages taken');
      runtime.links.setMessenger(inbox);
    });
    await once('world', async () => {
      const fence = parts.fence;
      const world = new WorldClient(nc, {
        timeoutMs: config.supervisor.request_timeout_ms,
        ...{ by: id, owner: id, names, agent: id },
        // Under a lease, each write names the claim the agent runs under; the store refuses any other.
        token: fence && (() => fence.token),
      });
      const { publishAttempts, publishWorldEvent } = await import('../../shared/nats/index.js');
      const publishing = { attempts: publishAttempts(config.cluster.replicas) };
      runtime.links.setWorld(world, async (input) => {
        const event = parseAgentEvent(input, id);
        return { id: event.id, ...(await publishWorldEvent(nc, event, names, id, publishing)) };
      });
      await watcher.open(world);
    });
    await once('approvals', async () => {
      const { SupervisorRequester } = await import('../../shared/nats/index.js');
      const supervisor = SupervisorRequester.control(nc, config.supervisor.request_timeout_ms, names, id);
      await parts.tools.link(
        async (call) => (await supervisor.request('call_pending', { call })).decision,
        (agent, tool, wake, timeoutMs) => supervisor.request('agent_endpoint', { id: agent, tool, wake }, { timeoutMs }),
      );
    });
    await once('jobs', () => startWork(parts, nc, names, listeners));
    await once('embedder', async () => {
      if (!config.embedding.enabled) return;
      const { RemoteEmbedder } = await import('../links/remote-embedder.js');
      await RemoteEmbedder.connect(nc, config.embedding.timeout_ms, names, hints).then(
        (embedder) => memory.attachEmbedder(embedder),
        (err: unknown) => logger.warn({ err: (err as Error).message }, 'vector search off: recall uses BM25'),
      );
    });
  };
}

/** The agent's readers of the fleet, not yet reading: its event consumer, inbox and world watches, and the hints heard events bring. */
async function openReaders(parts: FleetLinkOptions, names: FleetNames, listeners: Array<{ close(): Promise<void> }>) {
  const { setup, runtime, logger, cleanup } = parts;
  const { config } = setup;
  const { AgentEventListener } = await import('../links/agent-event-listener.js');
  // What the router found in a heard event's text, so that neither service is asked again.
  const hints = new HintBook();
  const ear = new AgentEventListener(
    runtime,
    { replayMax: config.events.replay_max, ackWaitS: config.events.ack_wait_s, storeDelayMs: config.events.store_delay_ms, names, hints },
    logger,
  );
  // What arrived while the agent was stopped is heard before it says ready; when NATS
  // comes later, as soon as it does.
  const { AgentInbox } = await import('../links/agent-inbox.js');
  const inbox = new AgentInbox(runtime, names, logger);
  const { AgentWorldWatcher } = await import('../links/agent-world-watcher.js');
  const watcher = new AgentWorldWatcher(runtime, setup.worldWatches, logger);
  for (const reader of [ear, inbox, watcher]) {
    cleanup.push(() => reader.close());
    listeners.push(reader);
  }
  return { ear, inbox, watcher, hints };
}

/** The agent's work from the queues, when it has skills that a queue it serves takes (`JobWorker`). */
async function startWork(
  parts: FleetLinkOptions,
  nc: NatsConnection,
  names: FleetNames,
  listeners: Array<{ close(): Promise<void> }>,
): Promise<void> {
  const { work, config } = parts.setup;
  if (work.length === 0) return;
  const { JobWorker } = await import('../links/job-worker.js');
  const { callsSettled } = await import('../tools/calls-settled.js');
  const { SupervisorRequester } = await import('../../shared/nats/index.js');
  const supervisor = SupervisorRequester.control(nc, config.supervisor.request_timeout_ms, names, parts.runtime.id);
  const { JobDeliveries } = await import('../links/job-deliveries.js');
  const settled = (ids: readonly string[], signal: AbortSignal) => callsSettled(parts.tools, ids, signal);
  const worker = new JobWorker(parts.runtime, work, names, parts.logger, (given) => supervisor.request('job_give_up', given), {
    concurrency: config.jobs.concurrency,
    settled,
    deliveries: new JobDeliveries(parts.deliveryNotes, parts.logger),
  });
  parts.cleanup.push(() => worker.close());
  listeners.push(worker);
  await worker.open(nc);
}

/** Keeps trying `link` (1 s, doubling to 30 s) until it has succeeded or the agent stops. */
async function retryUntilDone(link: () => Promise<void>, stopping: () => boolean, logger: Logger): Promise<void> {
  const stopped = new Error('the agent is stopping');
  await pRetry(
    async () => {
      if (stopping()) throw new AbortError(stopped);
      await link().catch((err: unknown) => {
        throw retriable(err);
      });
      logger.info('world events, inbox and world watches linked');
    },
    {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: 1000,
      factor: 2,
      maxTimeout: 30_000,
      onFailedAttempt: ({ error, attemptNumber }) => {
        const attempt = attemptNumber - 1;
        // A server without JetStream fails every time: say so a few times, then rarely.
        const level = attempt < 3 || attempt % 20 === 0 ? 'warn' : 'debug';
        logger[level]({ err: error.message, retry_in_ms: Math.min(1000 * 2 ** attempt, 30_000) }, 'world events still unavailable');
      },
    },
  ).catch((err: unknown) => {
    if (err !== stopped) throw err;
  });
}

/**
 * p-retry gives up at once on a TypeError or a thrown non-Error, taking it for a bug; linking
 * is tried again whatever it threw, until it works or the agent stops.
 */
function retriable(err: unknown): Error {
  if (err instanceof Error && !(err instanceof TypeError)) return err;
  return new Error(err instanceof Error ? err.message : String(err), { cause: err });
}
