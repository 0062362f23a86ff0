import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { resolveConfigFile, type ThymosConfig } from '../../shared/config/thymos-config.js';
import { type DomainSchema, loadDomainSchema } from '../../shared/domain/domain-schema.js';
import { appliesTo } from '../../shared/domain/event-filter.js';
import { workOf } from '../../shared/domain/queue-schema.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import { agentTokenPath, ensureAgentToken } from '../../shared/platform/agent-token.js';
import { CleanupStack } from '../../shared/platform/cleanup-stack.js';
import { flushCompileCache } from '../../shared/platform/compile-cache.js';
import { DataLock } from '../../shared/platform/data-lock.js';
import { createLogger, type Logger } from '../../shared/platform/logger.js';
import { PhaseClock, processCpuMs } from '../../shared/platform/phase-clock.js';
import { portTaken } from '../../shared/platform/port-probe.js';
import { StopOnce } from '../../shared/platform/stop-once.js';
import type { AgentStartContext } from '../../shared/protocol/agent-start-context.js';
import { SharedConceptExtractor } from '../links/shared-concept-extractor.js';
import { MemoryStore } from '../memory/memory-store.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';
import { assembleAgent, resolveDefinition } from './agent-assembly.js';
import { type AgentOptions, readStartContext } from './agent-options.js';
import { shutdownAgent } from './agent-shutdown.js';
import { type FleetLinks, linkToFleet } from './fleet-linker.js';

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
 * tells pm2 it is ready. Logs go to stdout (pm2 writes them to the agent's log), or to
 * `output.logFile` in a claimed spare, whose stdout pm2 writes to the spare's log. On SIGINT/SIGTERM it stops taking calls, finishes those in
 * flight, snapshots, closes the database and exits 0 within the shutdown budget.
 */
export async function runAgentProcess(options: AgentOptions, output: { logFile?: string | undefined } = {}): Promise<RunningAgent> {
  const fileConfig = resolveConfig(options.config);
  const config: ThymosConfig = options.natsUrl
    ? Object.freeze({ ...fileConfig, nats: { ...fileConfig.nats, url: options.natsUrl } })
    : fileConfig;
  const logger = createLogger({ level: config.log.level, bindings: { agent: options.agentId }, file: output.logFile, feed: true });
  const clock = new PhaseClock();
  const cleanup = new CleanupStack();
  // The MCP SDK is most of the code an agent loads; compiling it overlaps with the
  // database opening on the engine's own threads instead of preceding it.
  const httpModule = import('../mcp/agent-http-server.js');
  const natsModule = config.nats.url ? import('../links/agent-control-channel.js') : undefined;
  httpModule.catch(() => undefined);
  natsModule?.catch(() => undefined);
  try {
    const startContext = options.context ? readStartContext(options.context) : undefined;
    const state = await openAgentState(options, config, startContext, logger, cleanup, clock);
    const { store, lock, definition } = state;
    // Concepts come from the fleet's concept service once NATS is linked; the tagger here until then.
    const concepts = new SharedConceptExtractor(logger);
    const { memory, runtime, tools } = await assembleAgent(
      options,
      config,
      store,
      startContext,
      state.domain,
      { definition, defined: state.defined },
      logger,
      concepts,
    );
    clock.mark('memory_load');

    const { AgentHttpServer } = await httpModule;
    const token = config.mcp.require_token ? ensureAgentToken(agentTokenPath(config.dataPath, options.agentId)) : undefined;
    const http = new AgentHttpServer(runtime, config, logger, token, tools);
    await http.listen(config.agent.host, options.port);
    // From here on events may be replayed and acknowledged: the folder is kept whatever happens.
    state.started.listening = true;
    cleanup.push(() => http.close());
    clock.mark('listen');

    // Declared before the stop, which a shutdown request may run while the links are still being made.
    let links: FleetLinks | undefined;
    let schedule: NodeJS.Timeout | undefined;
    const stopper = new StopOnce((reason) =>
      shutdownAgent(
        { config, logger, runtime, channel: links?.channel, listeners: links?.listeners ?? [], http, store, lock, schedule },
        reason,
      ),
    );
    const stop = (reason: string) => stopper.stop(reason);

    links =
      config.nats.url && natsModule
        ? await linkToFleet({
            options,
            config,
            natsUrl: config.nats.url,
            channelModule: natsModule,
            runtime,
            memory,
            concepts,
            worldWatches: state.worldWatches,
            work: workOf(definition, startContext?.queues ?? state.domain?.queues ?? {}),
            tools,
            logger,
            cleanup,
            phase: (name) => clock.mark(name),
            onShutdown: () => void stop('control'),
            stopping: () => stopper.asked,
          })
        : undefined;

    const every = config.memory.consolidate_every_s;
    schedule = every > 0 ? setInterval(() => void runtime.consolidateWithin('schedule'), every * 1000) : undefined;
    schedule?.unref();

    runtime.setStatus('ready');
    links?.channel.publishStatus('ready');
    logger.info(
      {
        port: options.port,
        mode: options.mode,
        memories: memory.count,
        ms: clock.elapsed(),
        since_process_start_ms: Math.round(performance.now()),
        cpu_ms: processCpuMs(),
        phases: clock.phases,
      },
      `agent ready on http://${config.agent.host}:${options.port}/mcp`,
    );
    process.send?.('ready');
    setImmediate(flushCompileCache);
    return { runtime, config, stop, stopped: stopper.stopped };
  } catch (err) {
    await cleanup.run();
    logger.flush();
    throw toThymosError(err);
  }
}

/**
 * Takes the agent's data lock and opens its database while the domain schema (a Pkl child
 * process) loads, then settles who the agent is and which events and world changes reach it.
 */
async function openAgentState(
  options: AgentOptions,
  config: ThymosConfig,
  startContext: AgentStartContext | undefined,
  logger: Logger,
  cleanup: CleanupStack,
  clock: PhaseClock,
) {
  const dir = agentDataDir(config, options.agentId);
  // A first start refused before it could take anything in (a port in use, a bad context) leaves
  // no folder behind: pushed first, this runs last, after the database is closed.
  const fresh = !existsSync(dir);
  // A first start on a port another process holds is refused before it makes anything: the
  // database engine may write its files a moment after close, after the folder was removed.
  if (fresh && options.port !== 0 && (await portTaken(config.agent.host, options.port))) {
    throw new ThymosError(
      ErrorCode.PORT_IN_USE,
      `port ${options.port} on ${config.agent.host} is already in use; choose another with --port`,
      { details: { port: options.port } },
    );
  }
  const started = { listening: false };
  // The engine may still be writing its last files a moment after close: ENOTEMPTY is tried again.
  cleanup.push(() => fresh && !started.listening && rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));
  const lock = DataLock.acquire(dir, { file: 'agent.pid', name: `agent ${options.agentId}`, code: ErrorCode.AGENT_ALREADY_RUNNING });
  cleanup.push(() => lock.release());
  const domainPromise: Promise<DomainSchema | undefined> =
    startContext?.definition || !config.domainSchemaPath
      ? Promise.resolve(undefined)
      : loadDomainSchema(config.domainSchemaPath, { exclude: [config.dataPath] });
  domainPromise.catch(() => undefined);
  const store = await MemoryStore.open(join(dir, 'db'), { timeoutMs: config.agent.db_open_timeout_ms });
  cleanup.push(() => store.close());
  clock.mark('db_open');
  const domain = await domainPromise;
  const { definition, defined } = resolveDefinition(options.agentId, startContext?.definition, domain, logger);
  const worldWatches = (startContext?.worldWatches ?? domain?.worldWatches ?? [])
    .map((watch, index) => ({ index, watch }))
    .filter(({ watch }) => appliesTo(watch, { id: options.agentId, tags: definition.tags }));
  clock.mark('domain_schema');
  return { lock, store, domain, definition, defined, worldWatches, started };
}
