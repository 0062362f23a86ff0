import { agentMcpUrl, resolveConfigFile, type ThymosConfig } from '../../shared/config/index.js';
import { createLogger } from '../../shared/engines/index.js';
import { toThymosError } from '../../shared/errors/index.js';
import { CleanupStack, flushCompileCache, type Logger, PhaseClock, processCpuMs, StopOnce } from '../../shared/platform/index.js';
import { LeaseFence } from '../links/lease-fence.js';
import { SharedConceptExtractor } from '../links/shared-concept-extractor.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';
import { assembleAgent, type AssembledAgent } from './agent-assembly.js';
import { claimAgentData, openAgentStore } from './agent-data.js';
import { type AgentOptions, readStartContext } from './agent-options.js';
import { agentConfig, type AgentSetup, resolveAgentSetup } from './agent-setup.js';
import { shutdownAgent } from './agent-shutdown.js';
import { type FleetLinks, linkToFleet } from './fleet-linker.js';
import { serveMcpEndpoint } from './mcp-endpoint.js';

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
  const config = agentConfig(options);
  const logger = createLogger({
    level: config.log.level,
    bindings: { agent: options.agentId, host: config.host.name },
    file: output.logFile,
    feed: true,
  });
  const clock = new PhaseClock();
  const cleanup = new CleanupStack();
  // The MCP SDK is most of the code an agent loads; compiling it overlaps with the
  // database opening on the engine's own threads instead of preceding it.
  const serverModule = import('../mcp/agent-http-server.js');
  const channelModule = config.nats.url ? import('../links/agent-control-channel.js') : undefined;
  serverModule.catch(() => undefined);
  channelModule?.catch(() => undefined);
  try {
    const context = options.context ? readStartContext(options.context) : undefined;
    // Under a lease (placement by lease), an agent whose lease already ended does not start: LEASE_ENDED, exit 5, which pm2 does not restart.
    const fence = LeaseFence.arm(context, config.cluster.lease_ms, logger);
    const data = await claimAgentData({ id: options.agentId, port: options.port, config, cleanup });
    // The domain schema (a Pkl child process, when the start context holds no definition) loads while the database opens.
    const resolving = resolveAgentSetup({ options, config, context, logger });
    resolving.catch(() => undefined);
    const store = await openAgentStore({ data, config, cleanup });
    clock.mark('db_open');
    const setup = await resolving;
    clock.mark('domain_schema');
    // Concepts come from the fleet's concept service once NATS is linked; the tagger here until then.
    const concepts = new SharedConceptExtractor(logger);
    const agent = await assembleAgent({ setup, store, logger, extractor: concepts, fence });
    clock.mark('memory_load');
    const http = await serveMcpEndpoint({ setup, runtime: agent.runtime, tools: agent.tools, serverModule, logger, cleanup, fence });
    // From here on events may be replayed and acknowledged: the folder is kept whatever happens.
    data.started.listening = true;
    clock.mark('listen');

    // Declared before the stop, which a shutdown request may run while the links are still being made.
    let links: FleetLinks | undefined;
    let schedule: NodeJS.Timeout | undefined;
    const { runtime } = agent;
    const stopper = new StopOnce((reason) =>
      shutdownAgent(
        { config, logger, runtime, channel: links?.channel, listeners: links?.listeners ?? [], http, store, lock: data.lock, schedule },
        reason,
      ),
    );
    const stop = (reason: string) => stopper.stop(reason);
    links =
      config.nats.url && channelModule
        ? await linkToFleet({
            setup,
            natsUrl: config.nats.url,
            channelModule,
            runtime,
            memory: agent.memory,
            concepts,
            tools: agent.tools,
            deliveryNotes: store,
            logger,
            cleanup,
            phase: (name) => clock.mark(name),
            onShutdown: () => void stop('control'),
            stopping: () => stopper.asked,
            fence,
          })
        : undefined;
    schedule = scheduleConsolidation(setup, runtime);
    announceReady({ setup, agent, links, clock, logger });
    return { runtime, config, stop, stopped: stopper.stopped };
  } catch (err) {
    await cleanup.run();
    logger.flush();
    throw toThymosError(err);
  }
}

/** Consolidates the agent's memory every `[memory] consolidate_every_s`, when that is not 0; the schedule never keeps the process alive. */
function scheduleConsolidation(setup: AgentSetup, runtime: AgentRuntime): NodeJS.Timeout | undefined {
  const every = setup.config.memory.consolidate_every_s;
  const schedule = every > 0 ? setInterval(() => void runtime.consolidateWithin('schedule'), every * 1000) : undefined;
  schedule?.unref();
  return schedule;
}

/** Says the agent is ready: in its status, on NATS, in its log with the start's phases, and to pm2 (`wait_ready`). */
function announceReady(options: {
  setup: AgentSetup;
  agent: AssembledAgent;
  links: FleetLinks | undefined;
  clock: PhaseClock;
  logger: Logger;
}): void {
  const { setup, agent, links, clock, logger } = options;
  agent.runtime.setStatus('ready');
  links?.channel.publishStatus('ready');
  logger.info(
    {
      port: setup.port,
      mode: setup.mode,
      memories: agent.memory.count,
      ms: clock.elapsed(),
      since_process_start_ms: Math.round(performance.now()),
      cpu_ms: processCpuMs(),
      phases: clock.phases,
    },
    `agent ready on ${agentMcpUrl(setup.config, setup.port)}`,
  );
  process.send?.('ready');
  setImmediate(flushCompileCache);
}
