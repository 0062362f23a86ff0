import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { agentMcpUrl, type FleetPaths, Pm2Names, spareClaimFile, type ThymosConfig } from '../../shared/config/index.js';
import { type AliasEntry, type DomainSchema, grantedTools, workOf } from '../../shared/domain/index.js';
import { ErrorCode, parseInput, ThymosError, toThymosError } from '../../shared/errors/index.js';
import { isAlive, type Logger, PhaseClock, readAgentToken, writeAtomic } from '../../shared/platform/index.js';
import { type AgentMode, type AgentStartContextInput, AgentStartContextSchema } from '../../shared/protocol/index.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';
import type { NatsAccess } from '../nats-server/nats-access.js';
import { settledLog } from '../pm2/log-tail.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import { agentApp } from './agent-app.js';
import type { AgentLink } from './agent-link.js';
import type { AgentPool } from './agent-pool.js';
import { probeMcp } from './mcp-probe.js';
import type { PortAllocator } from './port-allocator.js';

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
  /** The warm pool a wake takes a spare from; without one (or when it is empty) agents start cold. */
  pool?: AgentPool | undefined;
  /** Who the managed nats-server admits: an agent is given its identity before its first start. */
  access?: NatsAccess | undefined;
}

/** Where a started agent runs. */
export interface StartedAgent {
  pid: number | null;
  port: number;
  /** True when pm2 already ran it (a start that outlived a supervisor crash) and it was adopted. */
  adopted: boolean;
  /** The start's steps timed: port, context, pm2_start, ready, mcp_probe; or port, context, claim, mcp_probe (the wake trace). */
  clock: PhaseClock;
  /** The spare that became the agent, or null for a cold start. */
  spare?: string | null;
}

/** The claim an agent starts under: its fencing token and, under a lease, when the agent stops itself unless the lease is renewed. */
export interface StartClaim {
  token: number;
  fenceAt?: number | undefined;
}

/** What a start hands the agent in its start context besides the domain's: its context properties and the claim it starts under. */
interface Handed {
  properties: Record<string, unknown>;
  claim: StartClaim | undefined;
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

  /** Starts `id` under `claim` (its fencing token, and its fence under a lease), handed over in its start context. */
  async start(
    id: string,
    mode: AgentMode,
    preferredPort: number | null,
    properties: Record<string, unknown>,
    claim?: StartClaim,
    retry = true,
  ): Promise<StartedAgent> {
    const { processes, paths, metrics, link, ports } = this.#o;
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
    // Its own NATS identity, made on its first start ever (with the managed server's users reloaded).
    await this.#o.access?.grant(id);

    const port = await ports.allocate(id, preferredPort);
    clock.mark('port');
    const t0 = performance.now();
    try {
      const slot = this.#o.pool?.take();
      let pid: number | null = null;
      let claimed = false;
      if (slot) {
        try {
          pid = await this.#claim(slot, id, mode, port, { properties, claim }, clock);
          claimed = true;
        } catch (err) {
          // The spare is gone with whatever it did; the wake goes on cold, on the same port.
          this.#o.logger.warn({ agent: id, slot, err: toThymosError(err).message }, 'claiming a spare failed; starting the agent cold');
          await processes.delete(slot).catch(() => undefined);
          await processes.delete(name).catch(() => undefined);
        }
      }
      if (!claimed) pid = await this.#cold(id, mode, port, { properties, claim }, clock);
      metrics.startupSeconds.observe((performance.now() - t0) / 1000);
      return { pid, port, adopted: false, clock, spare: claimed ? (slot ?? null) : null };
    } catch (err) {
      ports.release(port);
      // Not started: a key taken from the cluster for it leaves this host again (the retry below takes it anew).
      this.#o.access?.release(id);
      const e = toThymosError(err);
      // Another process (another fleet's agent on this machine) bound the port between its probe and the agent's bind: once more, on another.
      if (retry && /PORT_IN_USE/.test(e.message) && !ports.pinned(id)) {
        this.#o.logger.warn({ agent: id, port }, 'its port was taken as it started; starting it on another');
        return this.start(id, mode, null, properties, claim, false);
      }
      throw new ThymosError(e.code, `${e.message} (log: ${join(paths.logs, `${id}.log`)})`, { cause: err });
    }
  }

  /**
   * A cold start: `pm2 start thymos agent` with wait_ready, then the agent's ready notice and
   * an MCP answer. On failure nothing is left running; the caller releases the port.
   */
  async #cold(id: string, mode: AgentMode, port: number, handed: Handed, clock: PhaseClock): Promise<number | null> {
    const { config, processes, paths, link } = this.#o;
    const name = Pm2Names.agent(id);
    const t0 = performance.now();
    const budget = config.supervisor.start_timeout_ms;
    // Under a token, only a notice naming it is this start's: an older copy's notices are not.
    const life = link.waitForLife(id, budget, handed.claim?.token);
    // Watched before pm2 starts it, so an exit at any moment of the start is seen.
    const exit = await this.#exitDuringStart(id, [name]);
    try {
      const args = [
        'agent',
        '--agent-id',
        id,
        '--port',
        String(port),
        '--mode',
        mode,
        '--context',
        this.#writeContext(id, handed),
        '--nats-url',
        this.#o.natsUrl,
      ];
      clock.mark('context');
      await Promise.race([processes.start(agentApp(config, this.#o.thymosBin, name, args, join(paths.logs, `${id}.log`))), exit.failed]);
      clock.mark('pm2_start');
      const pid = (await Promise.race([life.seen, exit.failed])).state.pid;
      clock.mark('ready');
      await Promise.race([this.#probe(id, port, budget - (performance.now() - t0)), exit.failed]);
      clock.mark('mcp_probe');
      return pid;
    } catch (err) {
      life.cancel();
      await processes.delete(name).catch(() => undefined);
      throw err;
    } finally {
      exit.stop();
    }
  }

  /**
   * A warm start: the spare `slot` is told which agent to be (the claim is also left in
   * `run/<id>.claim.json`, which pm2's restarts of it read), answers once that agent is ready,
   * and its MCP endpoint is probed like a cold agent's. Throws if the spare refuses, exits or
   * does not answer in time; the caller then deletes it and starts the agent cold.
   */
  async #claim(slot: string, id: string, mode: AgentMode, port: number, handed: Handed, clock: PhaseClock): Promise<number> {
    const { config, paths, link } = this.#o;
    const t0 = performance.now();
    const budget = config.supervisor.start_timeout_ms;
    const claim = { agentId: id, port, mode, context: this.#writeContext(id, handed) };
    writeAtomic(spareClaimFile(paths, id), JSON.stringify(claim));
    clock.mark('context');
    // The spare renames its app after the agent as it takes the claim: an exit under either name fails the claim.
    const exit = await this.#exitDuringStart(id, [slot, Pm2Names.agent(id)]);
    try {
      const { pid } = await link.claimSpare(slot, claim, budget, exit.failed);
      clock.mark('claim');
      await Promise.race([this.#probe(id, port, budget - (performance.now() - t0)), exit.failed]);
      clock.mark('mcp_probe');
      return pid;
    } finally {
      exit.stop();
    }
  }

  #probe(id: string, port: number, leftMs: number): Promise<void> {
    const { config } = this.#o;
    return probeMcp(
      id,
      agentMcpUrl(config, port),
      Math.max(1000, leftMs),
      config.mcp.require_token ? readAgentToken(config.dataPath, id) : undefined,
    );
  }

  /** The agent's start context, checked by the schema the agent reads it with, written where it reads it; returns the path. */
  #writeContext(id: string, { properties, claim }: Handed): string {
    const { paths, domain } = this.#o;
    mkdirSync(paths.run, { recursive: true });
    const contextFile = join(paths.run, `${id}.context.json`);
    // Checked by the schema the agent reads it with, so a supervisor never hands over a context the agent refuses.
    const startContext = parseInput(
      AgentStartContextSchema,
      {
        definition: domain.agents[id],
        worldWatches: domain.worldWatches,
        aliases: this.#o.aliases,
        relationshipTypes: domain.relationshipTypes,
        conceptTypes: domain.conceptTypes,
        searchStrategies: domain.searchStrategies,
        tools: domain.agents[id] ? grantedTools(domain.tools, domain.agents[id].capabilities) : {},
        queues: domain.agents[id]
          ? Object.fromEntries(workOf(domain.agents[id], domain.queues).map((w) => [w.queue, domain.queues[w.queue]!]))
          : {},
        ...(claim === undefined ? {} : { ownershipToken: claim.token }),
        ...(claim?.fenceAt === undefined ? {} : { fenceAt: claim.fenceAt }),
        properties,
      } satisfies AgentStartContextInput,
      `${id}: start context`,
    );
    writeAtomic(contextFile, JSON.stringify(startContext));
    return contextFile;
  }

  /**
   * `failed` rejects as soon as pm2 reports that the agent's process exited while starting,
   * with the end of its log; it never resolves. pm2's event bus pushes the exit, so a
   * process that cannot start fails its start at once instead of being retried by pm2 until
   * the whole start budget ran out, and nothing is polled while the start goes well.
   */
  async #exitDuringStart(id: string, names: readonly string[]): Promise<{ failed: Promise<never>; stop: () => void }> {
    let fail: (err: Error) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => undefined);
    const log = join(this.#o.paths.logs, `${id}.log`);
    const since = Date.now();
    const stop = await this.#o.processes.watchExits((exit) => {
      // A late report of a copy deleted before this start is not this start's exit.
      if (!names.includes(exit.name) || exit.at < since) return;
      void settledLog(log)
        .then(logTail)
        .then((tail) =>
          fail(
            new ThymosError(
              ErrorCode.AGENT_START_FAILED,
              `${id} exited while starting (exit code ${exit.exitCode ?? 'none'}, pm2 status ${exit.status}, ${exit.restarts} restart(s)); its log ends: ${tail}`,
            ),
          ),
        );
    });
    return { failed, stop };
  }
}

/** The last error-looking lines of a log's text, joined, for an error message. */
function logTail(log: string, lines = 3): string {
  const text = log.trimEnd().split('\n');
  if (text.length === 1 && text[0] === '') return '(no log yet)';
  const errors = text.filter((l) => /error|thymos:|"level":(50|60)/i.test(l));
  return (errors.length ? errors : text).slice(-lines).join(' | ').slice(0, 1200);
}
