import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  AgentDefinitionSchema,
  loadDomainSchema,
  type AgentDefinition,
  type DomainSchema,
} from '../../shared/domain/domain-schema.js';
import { CleanupStack } from '../../shared/platform/cleanup-stack.js';
import { DataLock } from '../../shared/platform/data-lock.js';
import { aliasTable } from '../../shared/domain/alias-table.js';
import { appliesTo } from '../links/event-filter.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import { createLogger, type Logger } from '../../shared/platform/logger.js';
import { FleetNames } from '../../shared/protocol/fleet-names.js';
import { resolveConfigFile, type ThymosConfig } from '../../shared/config/thymos-config.js';
import type { AgentBehavior, CreateBehavior } from '../runtime/agent-behavior.js';
import type { AgentControlChannel } from '../links/agent-control-channel.js';
import { AgentMemory } from '../memory/agent-memory.js';
import { CompromiseExtractor } from '../concepts/concept-extractor.js';
import { ConceptTracker } from '../concepts/concept-tracker.js';
import { readStartContext, type AgentOptions } from './agent-options.js';
import { AgentRuntime } from '../runtime/agent-runtime.js';
import { MemoryConsolidator } from '../consolidation/memory-consolidator.js';
import { MemoryStore } from '../memory/memory-store.js';
import { DialogueBehavior } from '../runtime/dialogue-behavior.js';
import { AgentModels } from '../llm/agent-models.js';
import { agentTokenPath, ensureAgentToken } from '../../shared/platform/agent-token.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where an agent keeps its files: `<data_dir>/agents/<id>/`. */
export function agentDataDir(config: ThymosConfig, id: string): string {
  return join(config.dataPath, 'agents', id);
}

/** `--config`, else `$THYMOS_CONFIG`, else `./thymos.toml` if present, else built-in defaults. */
export const resolveConfig = resolveConfigFile;

/** A running agent process; `stop()` is what SIGINT/SIGTERM call. */
export interface RunningAgent {
  runtime: AgentRuntime;
  config: ThymosConfig;
  /** Stops gracefully; every caller gets the same stop. */
  stop(reason: string): Promise<void>;
  /** Settles when the agent has stopped, whoever asked (signal, NATS `shutdown`). */
  readonly stopped: Promise<void>;
}

/**
 * Runs one agent in this process until it is told to stop: takes the data lock, opens
 * the private database, builds the index, listens for MCP, links to NATS, and only then
 * tells pm2 it is ready. On SIGINT/SIGTERM it stops taking calls, finishes those in
 * flight, snapshots, closes the database and exits 0 within the shutdown budget.
 */
export async function runAgentProcess(options: AgentOptions): Promise<RunningAgent> {
  const fileConfig = resolveConfig(options.config);
  const config: ThymosConfig = options.natsUrl
    ? Object.freeze({ ...fileConfig, nats: { ...fileConfig.nats, url: options.natsUrl } })
    : fileConfig;
  const logger = createLogger({ level: config.log.level, bindings: { agent: options.agentId } });
  const started = performance.now();
  const phases: Record<string, number> = {};
  let last = started;
  const phase = (name: string) => {
    const now = performance.now();
    phases[name] = Math.round(now - last);
    last = now;
  };
  const cleanup = new CleanupStack();
  // The MCP SDK is most of the code an agent loads; compiling it overlaps with the
  // database opening on the engine's own threads instead of preceding it.
  const httpModule = import('../mcp/agent-http-server.js');
  const natsModule = config.nats.url ? import('../links/agent-control-channel.js') : undefined;
  httpModule.catch(() => undefined);
  natsModule?.catch(() => undefined);
  try {
    const startContext = options.context ? readStartContext(options.context) : undefined;
    const dir = agentDataDir(config, options.agentId);
    const lock = DataLock.acquire(dir, { file: 'agent.pid', name: `agent ${options.agentId}`, code: ErrorCode.AGENT_ALREADY_RUNNING });
    cleanup.push(() => lock.release());

    // Pkl evaluation (a child process) overlaps with opening the database.
    const domainPromise: Promise<DomainSchema | undefined> =
      startContext?.definition || !config.domainSchemaPath ? Promise.resolve(undefined) : loadDomainSchema(config.domainSchemaPath);
    domainPromise.catch(() => undefined);
    const store = await MemoryStore.open(join(dir, 'db'), { timeoutMs: config.agent.db_open_timeout_ms });
    cleanup.push(() => store.close());
    phase('db_open');
    const domain = await domainPromise;
    const { definition, defined } = resolveDefinition(options.agentId, startContext?.definition, domain, logger);
    const eventFilters = startContext?.eventFilters ?? domain?.eventFilters ?? [];
    const worldWatches = (startContext?.worldWatches ?? domain?.worldWatches ?? [])
      .map((watch, index) => ({ index, watch }))
      .filter(({ watch }) => appliesTo(watch, { id: options.agentId, tags: definition.tags }));
    phase('domain_schema');

    const memory = await AgentMemory.load(store, config.memory, { logger });
    let concepts: ConceptTracker | undefined;
    if (config.memory.concepts) {
      const aliases = startContext?.aliases ?? (domain ? aliasTable(domain) : []);
      const relationshipTypes = startContext?.relationshipTypes ?? domain?.relationshipTypes ?? {};
      const conceptTypes = startContext?.conceptTypes ?? domain?.conceptTypes ?? {};
      concepts = await ConceptTracker.attach(memory, store, { extractor: new CompromiseExtractor(), settings: config.memory, aliases, relationshipTypes, conceptTypes, logger });
    }
    const consolidator = new MemoryConsolidator({ memory, store, concepts, settings: config.memory, logger });
    await seedKnowledge(memory, store, definition, options.agentId);
    const models = new AgentModels(options.agentId, config.llm, definition, process.env, { config: config.file, domain: config.domainSchemaPath });
    const behavior = await loadBehavior(config, options.agentId, definition);
    phase('memory_load');

    const runtime = new AgentRuntime({
      id: options.agentId,
      definition,
      defined,
      mode: options.mode,
      port: options.port,
      memory,
      store,
      concepts,
      consolidator,
      searchStrategies: startContext?.searchStrategies ?? domain?.searchStrategies ?? {},
      consolidateOnPassivate: config.memory.consolidate_on_passivate,
      models,
      reasonOnEvents: definition.reasonOnEvents ?? config.agent.reason_on_events,
      behavior,
      logger,
    });
    await runtime.restore();
    if (models.usesModel('consolidation')) consolidator.useWriter((sources, draft) => runtime.wordInsight(sources, draft));

    const { AgentHttpServer } = await httpModule;
    const token = config.mcp.require_token ? ensureAgentToken(agentTokenPath(config.dataPath, options.agentId)) : undefined;
    const http = new AgentHttpServer(runtime, config, logger, token);
    await http.listen(config.agent.host, options.port);
    cleanup.push(() => http.close());
    phase('listen');

    let stopReason: string | undefined;
    let markStopped!: (result: Promise<void>) => void;
    const stopped = new Promise<void>((resolve) => {
      markStopped = resolve;
    });
    const stop = (reason: string): Promise<void> => {
      if (stopReason === undefined) {
        stopReason = reason;
        markStopped(shutdown(reason));
      }
      return stopped;
    };

    let channel: AgentControlChannel | undefined;
    const listeners: Array<{ close(): Promise<void> }> = [];
    if (config.nats.url && natsModule) {
      const names = new FleetNames(config.fleet.name);
      const { AgentControlChannel } = await natsModule;
      channel = new AgentControlChannel(
        runtime,
        { servers: config.nats.url, names, heartbeatMs: config.agent.heartbeat_ms, onShutdown: () => void stop('control') },
        logger,
      );
      cleanup.push(() => channel!.close());
      const linked = await channel.waitUntilConnected(config.agent.nats_wait_ms);
      if (!linked) logger.warn({ url: config.nats.url }, 'nats not reachable yet; serving MCP and reconnecting in the background');
      phase('nats');
      const location = typeof startContext?.properties.location === 'string' ? startContext.properties.location : definition.homeLocation;
      const { AgentEventListener } = await import('../links/agent-event-listener.js');
      const ear = new AgentEventListener(
        runtime,
        { listener: { id: options.agentId, name: definition.persona.name, tags: definition.tags, aliases: definition.aliases, location }, filters: eventFilters, replayMax: config.events.replay_max, ackWaitS: config.events.ack_wait_s, names },
        logger,
      );
      cleanup.push(() => ear.close());
      listeners.push(ear);
      // What arrived while the agent was stopped is heard before it says ready; when NATS
      // comes later, as soon as it does.
      const { AgentInbox } = await import('../links/agent-inbox.js');
      const inbox = new AgentInbox(runtime, names, logger);
      cleanup.push(() => inbox.close());
      listeners.push(inbox);
      const { AgentWorldWatcher } = await import('../links/agent-world-watcher.js');
      const { WorldClient } = await import('../../shared/nats/world-client.js');
      const watcher = new AgentWorldWatcher(runtime, worldWatches, logger);
      cleanup.push(() => watcher.close());
      listeners.push(watcher);
      // Each step runs once: a retry after a failure (JetStream still recovering after a broker
      // restart, say) picks up at the step that failed, never starting a reader twice.
      const done = new Set<string>();
      const once = async (step: string, run: () => Promise<void>) => {
        if (done.has(step)) return;
        await run();
        done.add(step);
      };
      const listen = async () => {
        const nc = await channel!.connection();
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
          const world = new WorldClient(nc, { timeoutMs: config.supervisor.request_timeout_ms, by: options.agentId, owner: options.agentId, names });
          runtime.links.setWorld(world);
          await watcher.open(world);
        });
        await once('embedder', async () => {
          if (!config.embedding.enabled) return;
          const { RemoteEmbedder } = await import('../links/remote-embedder.js');
          await RemoteEmbedder.connect(nc, config.embedding.timeout_ms, names).then(
            (embedder) => memory.attachEmbedder(embedder),
            (err: unknown) => logger.warn({ err: (err as Error).message }, 'vector search off: recall uses BM25'),
          );
        });
      };
      /** Keeps trying (1 s, doubling to 30 s) until every step has run or the agent stops. */
      const listenUntilDone = async () => {
        for (let attempt = 0, wait = 1000; stopReason === undefined; attempt++, wait = Math.min(wait * 2, 30_000)) {
          try {
            await listen();
            logger.info('world events, inbox and world watches linked');
            return;
          } catch (err) {
            // A server without JetStream fails every time: say so a few times, then rarely.
            const level = attempt < 3 || attempt % 20 === 0 ? 'warn' : 'debug';
            logger[level]({ err: (err as Error).message, retry_in_ms: wait }, 'world events still unavailable');
            await sleep(wait);
          }
        }
      };
      if (linked) {
        await listen().catch((err: unknown) => {
          logger.warn({ err: (err as Error).message }, 'world events unavailable (JetStream off or recovering, or no event stream yet); retrying in the background');
          void listenUntilDone();
        });
        phase('replay');
      } else {
        void listenUntilDone();
      }
    }

    const every = config.memory.consolidate_every_s;
    const schedule = every > 0 ? setInterval(() => void runtime.consolidateWithin('schedule'), every * 1000) : undefined;
    schedule?.unref();

    async function shutdown(reason: string): Promise<void> {
      clearInterval(schedule);
      const budget = config.agent.shutdown_timeout_ms;
      logger.info({ reason, in_flight: runtime.inFlight }, 'stopping');
      const hardStop = setTimeout(() => {
        logger.error({ budget_ms: budget }, 'graceful stop ran over its budget; exiting');
        process.exit(1);
      }, budget);
      runtime.setStatus('stopping');
      channel?.publishStatus('stopping');
      const drained = await runtime.drain(Math.floor(budget * 0.6));
      if (!drained) logger.warn({ in_flight: runtime.inFlight }, 'in-flight calls did not finish in time');
      runtime.links.setMessenger(undefined);
      runtime.links.setWorld(undefined);
      for (const l of listeners) await l.close();
      if (config.memory.consolidate_on_passivate) await runtime.consolidateWithin('passivation', config.memory.consolidate_budget_ms);
      await runtime.snapshot(`stop:${reason}`).catch((err) => logger.error({ err }, 'snapshot failed'));
      await http.close();
      channel?.publishStatus('stopped');
      await channel?.close();
      await store.close();
      lock.release();
      clearTimeout(hardStop);
      logger.info('stopped');
    }

    runtime.setStatus('ready');
    channel?.publishStatus('ready');
    logger.info(
      {
        port: options.port,
        mode: options.mode,
        memories: memory.count,
        ms: Math.round(performance.now() - started),
        since_process_start_ms: Math.round(performance.now()),
        phases,
      },
      `agent ready on http://${config.agent.host}:${options.port}/mcp`,
    );
    process.send?.('ready');
    return { runtime, config, stop, stopped };
  } catch (err) {
    await cleanup.run();
    logger.flush();
    throw toThymosError(err);
  }
}

function resolveDefinition(
  id: string,
  fromContext: AgentDefinition | undefined,
  domain: DomainSchema | undefined,
  logger: Logger,
): { definition: AgentDefinition; defined: boolean } {
  if (fromContext) return { definition: fromContext, defined: true };
  const found = domain?.agents[id];
  if (found) return { definition: found, defined: true };
  logger.info({ agent: id }, 'agent id not defined by the domain schema; running with a default persona');
  return { definition: defaultDefinition(id), defined: false };
}

/** The persona of an agent that no schema defines: named after its id, plain-spoken. */
export function defaultDefinition(id: string): AgentDefinition {
  const name = id
    .split('_')
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join(' ');
  return AgentDefinitionSchema.parse({ persona: { name, traits: [], speechStyle: 'plain' } });
}

/** Stores each `knowledge` fact of the definition once, however often the agent starts. */
async function seedKnowledge(memory: AgentMemory, store: MemoryStore, definition: AgentDefinition, id: string): Promise<void> {
  if (definition.knowledge.length === 0) return;
  const seeded = new Set((await store.getMeta<string[]>('knowledge_seeded')) ?? []);
  const fresh = definition.knowledge.filter((fact) => !seeded.has(hash(fact)));
  if (fresh.length === 0) return;
  await memory.rememberMany(fresh.map((content) => ({ content, importance: 0.7, tags: ['knowledge'], source: { kind: 'knowledge', by: id } })));
  for (const f of fresh) seeded.add(hash(f));
  await store.setMeta('knowledge_seeded', [...seeded]);
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

async function loadBehavior(config: ThymosConfig, id: string, definition: AgentDefinition): Promise<AgentBehavior> {
  if (!config.behaviorPath) return new DialogueBehavior();
  const path = resolve(config.behaviorPath);
  let mod: { createBehavior?: CreateBehavior; default?: CreateBehavior };
  try {
    mod = (await import(pathToFileURL(path).href)) as typeof mod;
  } catch (err) {
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `agent.behavior: cannot load ${path}: ${(err as Error).message}`, {
      cause: err,
      location: { file: config.file, path: 'agent.behavior' },
    });
  }
  const create = mod.createBehavior ?? mod.default;
  if (typeof create !== 'function') {
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `agent.behavior: ${path} must export a function createBehavior()`, {
      location: { file: config.file, path: 'agent.behavior' },
    });
  }
  const behavior = await create({ id, definition });
  if (!behavior || typeof behavior.talk !== 'function') {
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `agent.behavior: createBehavior() in ${path} must return an object with talk()`, {
      location: { file: config.file, path: 'agent.behavior' },
    });
  }
  return behavior;
}
