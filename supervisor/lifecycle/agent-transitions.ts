import type { JetStreamManager } from '@nats-io/jetstream';

import { Pm2Names, type ThymosConfig } from '../../shared/config/index.js';
import type { LifecycleState } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import { deleteAgentConsumer, ensureAgentConsumer } from '../../shared/nats/index.js';
import { isAlive, type Logger, PhaseClock } from '../../shared/platform/index.js';
import type { AgentMode, FleetNames } from '../../shared/protocol/index.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';
import type { AgentOwnership } from '../ownership/agent-ownership.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import type { AgentArchive } from './agent-archive.js';
import type { AgentHeartbeats } from './agent-heartbeats.js';
import type { AgentLink } from './agent-link.js';
import type { AgentEntry, AgentRegistry } from './agent-registry.js';
import { type AgentStarter, CONTROL_TIMEOUT_MS } from './agent-starter.js';
import { RUNNING, STATE_RANK } from './agent-states.js';
import { type Report } from './move-report.js';
import type { PortAllocator } from './port-allocator.js';

export interface AgentTransitionsOptions {
  config: ThymosConfig;
  registry: AgentRegistry;
  processes: ProcessManager;
  link: AgentLink;
  ports: PortAllocator;
  archive: AgentArchive;
  /** The claims this supervisor holds: an agent is moved only under one, and its token goes with each archive write. */
  ownership: AgentOwnership;
  starter: AgentStarter;
  heartbeats: AgentHeartbeats;
  metrics: SupervisorMetrics;
  logger: Logger;
  names: FleetNames;
  /** JetStream, when the server has it: agents' event consumers are kept here. */
  jsm?: JetStreamManager | undefined;
  /** Called when an agent stops running (Dormant or Archived): its live subscriptions end. */
  onStopped?: ((id: string) => Promise<unknown>) | undefined;
}

/**
 * Takes one agent from its state to another, step by step — set mode, stop with a
 * snapshot, restore from its archive, pack it, start it — recording each step in the
 * registry, its history and the report.
 */
export class AgentTransitions {
  readonly #o: AgentTransitionsOptions;

  constructor(options: AgentTransitionsOptions) {
    this.#o = options;
  }

  /** Runs the steps from an agent's state to `to`; records each in the report. Never throws. */
  async run(
    id: string,
    to: LifecycleState,
    score: number | null,
    reason: string,
    report: Report,
    properties: Record<string, unknown>,
  ): Promise<boolean> {
    const { registry, metrics, logger } = this.#o;
    const from = registry.get(id)!.state;
    let step = 'plan';
    try {
      const token = this.#o.ownership.holds(id);
      if (token === undefined) throw new ThymosError(ErrorCode.NOT_OWNER, `${id} is not held by this supervisor: another moves it`);
      let entry = registry.get(id)!;
      if (RUNNING(entry.state) && RUNNING(to)) {
        step = 'set_mode';
        await this.#setMode(entry, to === 'active' ? 'active' : 'passive', reason);
        (STATE_RANK[to] > STATE_RANK[from] ? report.upgraded : report.downgraded).push(id);
        metrics.transitions.inc({ kind: STATE_RANK[to] > STATE_RANK[from] ? 'upgrade' : 'downgrade' });
        return true;
      }
      if (RUNNING(entry.state)) {
        step = 'stop';
        entry = await this.#stop(entry, reason);
        report.stopped.push(id);
        metrics.transitions.inc({ kind: 'stop' });
      }
      if (entry.state === 'archived' && to !== 'archived') {
        step = 'restore';
        await this.#o.archive.unpack(id, token);
        if (this.#o.jsm) await ensureAgentConsumer(this.#o.jsm, id, this.#o.config.events, this.#o.names);
        entry = await this.setState(entry, 'dormant', {}, reason);
        report.restored.push(id);
        metrics.transitions.inc({ kind: 'restore' });
      }
      if (to === 'archived' && entry.state === 'dormant') {
        step = 'archive';
        await this.#o.archive.pack(id, token);
        // An Archived agent stops retaining events.
        if (this.#o.jsm) await deleteAgentConsumer(this.#o.jsm, id, this.#o.names);
        entry = await this.setState(entry, 'archived', {}, reason);
        report.archived.push(id);
        metrics.transitions.inc({ kind: 'archive' });
      }
      if (RUNNING(to) && entry.state === 'dormant') {
        step = 'start';
        await this.#start(entry, to === 'active' ? 'active' : 'passive', score, reason, properties, token);
        report.started.push(id);
        metrics.transitions.inc({ kind: 'start' });
      }
      return true;
    } catch (err) {
      const e = toThymosError(err);
      logger.error({ agent: id, step, code: e.code, err: e.message }, 'transition failed');
      metrics.failures.inc({ kind: step, code: e.code });
      report.failed.push({ id, code: e.code, message: e.message });
      const entry = registry.get(id)!;
      await registry.update(id, { last_error: { code: e.code, message: e.message } }).catch(() => undefined);
      await registry
        .recordTransition({
          id,
          at: new Date().toISOString(),
          from: entry.state,
          to,
          score,
          reason: `${reason} (${step})`,
          ok: false,
          error: `${e.code}: ${e.message}`,
        })
        .catch(() => undefined);
      return false;
    }
  }

  /** Records a new state (and the history row when it changed); a stopped agent's live subscriptions end. */
  async setState(entry: AgentEntry, state: LifecycleState, patch: Partial<AgentEntry>, reason: string): Promise<AgentEntry> {
    const { registry, logger } = this.#o;
    const next = await registry.update(entry.id, { ...patch, state, since: state === entry.state ? entry.since : Date.now() });
    if (state !== entry.state && RUNNING(entry.state) && !RUNNING(state)) {
      await this.#o
        .onStopped?.(entry.id)
        .catch((err: unknown) => logger.warn({ err, id: entry.id }, 'ending the live subscriptions of a stopped agent failed'));
    }
    if (state !== entry.state) {
      await registry.recordTransition({
        id: entry.id,
        at: new Date().toISOString(),
        from: entry.state,
        to: state,
        score: next.score,
        reason,
        ok: true,
        error: null,
      });
    }
    return next;
  }

  async #start(
    entry: AgentEntry,
    mode: AgentMode,
    score: number | null,
    reason: string,
    properties: Record<string, unknown>,
    token: number,
  ): Promise<AgentEntry> {
    const deadline = this.#o.ownership.deadline;
    // Under a lease, the agent stops itself a margin before the lease could end, unless it is renewed meanwhile.
    const fenceAt = deadline === undefined ? undefined : deadline - this.#o.config.cluster.fence_margin_ms;
    // A lease not renewed since its fence passed (the supervisor was paused): no agent starts under it.
    if (fenceAt !== undefined && fenceAt <= Date.now())
      throw new ThymosError(ErrorCode.LEASE_ENDED, `${entry.id} not started: this host's lease was not renewed in time (its fence passed)`);
    const { pid, port, adopted, clock, spare } = await this.#o.starter.start(entry.id, mode, entry.port, properties, { token, fenceAt });
    const state = mode === 'active' ? 'active' : 'listening';
    const next = adopted
      ? await this.setState(entry, state, { mode, pid, port, last_error: null }, `${reason} (adopted)`)
      : await this.setState(entry, state, { mode, pid, port, score, last_error: null }, reason);
    clock.mark('registry');
    this.#o.logger.info(
      { agent: entry.id, port, mode, pid, adopted, spare: spare ?? null, ms: clock.elapsed(), phases: clock.phases },
      'agent started',
    );
    return next;
  }

  async #setMode(entry: AgentEntry, mode: AgentMode, reason: string): Promise<AgentEntry> {
    await this.#o.link.control(entry.id, { op: 'set_mode', mode }, CONTROL_TIMEOUT_MS);
    return this.setState(entry, mode === 'active' ? 'active' : 'listening', { mode }, reason);
  }

  /**
   * An agent whose claim was lost: pm2 stops its process with no snapshot asked (the agent stops
   * itself at its fence, and its data stays in its folder), and it is recorded Dormant with
   * LEASE_ENDED as its last error.
   */
  async abandon(entry: AgentEntry, reason: string): Promise<AgentEntry> {
    await this.#o.processes.delete(Pm2Names.agent(entry.id));
    this.#o.ports.release(entry.port, entry.id);
    this.#o.heartbeats.forget(entry.id);
    this.#o.logger.warn({ agent: entry.id, reason }, 'agent stopped: its claim was lost');
    return this.setState(entry, 'dormant', { mode: null, pid: null, last_error: { code: ErrorCode.LEASE_ENDED, message: reason } }, reason);
  }

  /** Snapshot acknowledged, then pm2 stops the process (SIGINT, SIGKILL after the budget). */
  async #stop(entry: AgentEntry, reason: string): Promise<AgentEntry> {
    const { processes, config } = this.#o;
    const clock = new PhaseClock();
    const name = Pm2Names.agent(entry.id);
    const app = await processes.describe(name);
    clock.mark('describe');
    if (app?.status === 'online') {
      await this.#o.link.control(entry.id, { op: 'snapshot' }, config.agent.shutdown_timeout_ms).catch((err: unknown) => {
        const e = toThymosError(err);
        throw new ThymosError(
          ErrorCode.SNAPSHOT_FAILED,
          `${entry.id} was not stopped: its snapshot was not acknowledged (${e.code}: ${e.message})`,
          { cause: err },
        );
      });
      clock.mark('snapshot');
    }
    await processes.delete(name);
    clock.mark('pm2_delete');
    if (app?.pid && isAlive(app.pid)) {
      throw new ThymosError(ErrorCode.PROCESS_MANAGER_ERROR, `${entry.id}: pid ${app.pid} still alive after pm2 stopped it`);
    }
    this.#o.ports.release(entry.port, entry.id);
    this.#o.heartbeats.forget(entry.id);
    const next = await this.setState(entry, 'dormant', { mode: null, pid: null }, reason);
    clock.mark('registry');
    this.#o.logger.info({ agent: entry.id, ms: clock.elapsed(), phases: clock.phases }, 'agent stopped');
    return next;
  }
}
