import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { type FleetPaths, Pm2Names } from '../../shared/config/fleet-paths.js';
import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import type { AliasEntry } from '../../shared/domain/alias-table.js';
import type { DomainSchema } from '../../shared/domain/domain-schema.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import { parseInput } from '../../shared/errors/zod-issues.js';
import { readAgentToken } from '../../shared/platform/agent-token.js';
import { isAlive } from '../../shared/platform/data-lock.js';
import type { Logger } from '../../shared/platform/logger.js';
import { PhaseClock } from '../../shared/platform/phase-clock.js';
import { writeAtomic } from '../../shared/platform/write-atomic.js';
import type { AgentMode } from '../../shared/protocol/agent-protocol.js';
import { type AgentStartContextInput, AgentStartContextSchema } from '../../shared/protocol/agent-start-context.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import type { AgentLink } from './agent-link.js';
import { probeMcp } from './mcp-probe.js';
import type { PortAllocator } from './port-allocator.js';
import type { SupervisorMetrics } from './supervisor-metrics.js';

/**
 * Node flags of every agent process. An agent spends its life mostly idle between short
 * bursts of work, so a young generation of 1 MB semi-spaces (instead of up to 16) keeps about
 * 6 MB less resident per agent for a few more, cheaper scavenges during a burst.
 */
const AGENT_NODE_ARGS = ['--max-semi-space-size=1'];

/** Deadline of a quick control request to an agent (get_state, set_mode). */
export const CONTROL_TIMEOUT_MS = 5000;

export interface AgentStarterOptions {
  config: ThymosConfig;
  domain: DomainSchema;
  paths: FleetPaths;
  processes: ProcessManager;
  link: AgentLink;
  ports: PortAllocator;
  metrics: SupervisorMetrics;
  logger: Logger;
  /** The NATS server agents are told to use. */
  natsUrl: string;
  /** The bundled `thymos` command agents run. */
  thymosBin: string;
  /** Every alias of the domain, handed to each agent in its start context. */
  aliases: AliasEntry[];
}

/** Where a started agent runs. */
export interface StartedAgent {
  pid: number | null;
  port: number;
  /** True when pm2 already ran it (a start that outlived a supervisor crash) and it was adopted. */
  adopted: boolean;
  /** The start's steps timed: port, context, pm2_start, ready, mcp_probe (the wake trace). */
  clock: PhaseClock;
}

/**
 * Starts one agent process under pm2: a port, its start context (checked by the schema the
 * agent reads it with), `pm2 start` with wait_ready, then its ready notice on NATS and an MCP
 * answer on its port. A process that exits while starting fails the start at once with the
 * end of its log; whatever fails, nothing is left running and the port is released.
 */
export class AgentStarter {
  readonly #o: AgentStarterOptions;

  constructor(options: AgentStarterOptions) {
    this.#o = options;
  }

  async start(id: string, mode: AgentMode, preferredPort: number | null, properties: Record<string, unknown>): Promise<StartedAgent> {
    const { config, processes, paths, metrics, link, ports } = this.#o;
    const clock = new PhaseClock();
    const name = Pm2Names.agent(id);
    const existing = await processes.describe(name);
    if (existing?.status === 'online' && existing.pid && isAlive(existing.pid)) {
      // pm2 still runs it (a start that outlived a supervisor crash): adopt rather than start a second copy.
      const { state } = await link.control(id, { op: 'set_mode', mode }, CONTROL_TIMEOUT_MS);
      ports.hold(state.port);
      return { pid: existing.pid, port: state.port, adopted: true, clock };
    }
    if (existing) await processes.delete(name);

    const port = await ports.allocate(preferredPort);
    clock.mark('port');
    const t0 = performance.now();
    const budget = config.supervisor.start_timeout_ms;
    const life = link.waitForLife(id, budget);
    // Watched before pm2 starts it, so an exit at any moment of the start is seen.
    const exit = await this.#exitDuringStart(id, name);
    let pid: number | null = null;
    try {
      const args = this.#args(id, port, mode, properties);
      clock.mark('context');
      await Promise.race([
        processes.start({
          name,
          script: this.#o.thymosBin,
          args,
          nodeArgs: AGENT_NODE_ARGS,
          cwd: config.file ? join(config.file, '..') : process.cwd(),
          waitReady: true,
          listenTimeoutMs: budget,
          killTimeoutMs: config.agent.shutdown_timeout_ms + 2000,
          autorestart: true,
          restartDelayMs: config.supervisor.restart_delay_ms,
          logFile: join(paths.logs, `${id}.log`),
        }),
        exit.failed,
      ]);
      clock.mark('pm2_start');
      pid = (await Promise.race([life.seen, exit.failed])).state.pid;
      clock.mark('ready');
      const left = Math.max(1000, budget - (performance.now() - t0));
      await Promise.race([
        probeMcp(id, `http://${config.agent.host === '0.0.0.0' ? '127.0.0.1' : config.agent.host}:${port}/mcp`, left, config.mcp.require_token ? readAgentToken(config.dataPath, id) : undefined),
        exit.failed,
      ]);
    } catch (err) {
      life.cancel();
      await processes.delete(name).catch(() => undefined);
      ports.release(port);
      const e = toThymosError(err);
      throw new ThymosError(e.code, `${e.message} (log: ${join(paths.logs, `${id}.log`)})`, { cause: err });
    } finally {
      exit.stop();
    }
    clock.mark('mcp_probe');
    metrics.startupSeconds.observe((performance.now() - t0) / 1000);
    return { pid, port, adopted: false, clock };
  }

  /** `thymos agent` arguments, with the start context written where the agent reads it. */
  #args(id: string, port: number, mode: AgentMode, properties: Record<string, unknown>): string[] {
    const { config, paths, domain } = this.#o;
    mkdirSync(paths.run, { recursive: true });
    const contextFile = join(paths.run, `${id}.context.json`);
    // Checked by the schema the agent reads it with, so a supervisor never hands over a context the agent refuses.
    const startContext = parseInput(
      AgentStartContextSchema,
      {
        definition: domain.agents[id],
        eventFilters: domain.eventFilters,
        worldWatches: domain.worldWatches,
        aliases: this.#o.aliases,
        relationshipTypes: domain.relationshipTypes,
        conceptTypes: domain.conceptTypes,
        searchStrategies: domain.searchStrategies,
        properties,
      } satisfies AgentStartContextInput,
      `${id}: start context`,
    );
    writeAtomic(contextFile, JSON.stringify(startContext));
    const args = ['agent', '--agent-id', id, '--port', String(port), '--mode', mode, '--context', contextFile, '--nats-url', this.#o.natsUrl];
    if (config.file) args.push('--config', config.file);
    return args;
  }

  /**
   * `failed` rejects as soon as pm2 reports that the agent's process exited while starting,
   * with the end of its log; it never resolves. pm2's event bus pushes the exit, so a
   * process that cannot start fails its start at once instead of being retried by pm2 until
   * the whole start budget ran out, and nothing is polled while the start goes well.
   */
  async #exitDuringStart(id: string, name: string): Promise<{ failed: Promise<never>; stop: () => void }> {
    let fail: (err: Error) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => undefined);
    const log = join(this.#o.paths.logs, `${id}.log`);
    const since = Date.now();
    const stop = await this.#o.processes.watchExits((exit) => {
      // A late report of a copy deleted before this start is not this start's exit.
      if (exit.name !== name || exit.at < since) return;
      void logTailSettled(log).then((tail) =>
        fail(new ThymosError(ErrorCode.AGENT_START_FAILED, `${id} exited while starting (exit code ${exit.exitCode ?? 'none'}, pm2 status ${exit.status}, ${exit.restarts} restart(s)); its log ends: ${tail}`)),
      );
    });
    return { failed, stop };
  }
}

/**
 * The end of a log a process that just exited wrote: pm2 may still be writing its last lines
 * when it reports the exit, so the file is read again until it stops growing (at most 1 s).
 * Only a failed start waits here.
 */
async function logTailSettled(file: string): Promise<string> {
  const size = () => {
    try {
      return statSync(file).size;
    } catch {
      return -1;
    }
  };
  const deadline = performance.now() + 1000;
  let last = size();
  for (;;) {
    await sleep(50);
    const now = size();
    if (now === last || performance.now() > deadline) break;
    last = now;
  }
  return logTail(file);
}

/** The last error-looking lines of a log, joined, for an error message. */
function logTail(file: string, lines = 3): string {
  try {
    const text = readFileSync(file, 'utf8').trimEnd().split('\n');
    const errors = text.filter((l) => /error|thymos:|"level":(50|60)/i.test(l));
    return (errors.length ? errors : text).slice(-lines).join(' | ').slice(0, 1200);
  } catch {
    return '(no log yet)';
  }
}
