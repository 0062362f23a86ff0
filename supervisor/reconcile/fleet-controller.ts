import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import PQueue from 'p-queue';

import { Pm2Names, type ThymosConfig } from '../../shared/config/index.js';
import { agentIdsPreview, type LifecycleState } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import { ensureAgentConsumer } from '../../shared/nats/index.js';
import { type Logger, PhaseClock } from '../../shared/platform/index.js';
import type { AgentMode, FleetNames, FleetStatus, ReconcileContext, ReconcileReport } from '../../shared/protocol/index.js';
import { adoptAgents } from '../lifecycle/agent-adoption.js';
import type { AgentHeartbeats } from '../lifecycle/agent-heartbeats.js';
import type { AgentLink } from '../lifecycle/agent-link.js';
import { type AgentRegistry, statusRow } from '../lifecycle/agent-registry.js';
import { RUNNING } from '../lifecycle/agent-states.js';
import type { AgentTransitions } from '../lifecycle/agent-transitions.js';
import { describeMove, emptyReport, moveCount, type Report, sortReport } from '../lifecycle/move-report.js';
import type { PortAllocator } from '../lifecycle/port-allocator.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';
import { type AgentOwnership, runsUnderClaim } from '../ownership/agent-ownership.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import type { RelevanceEvaluator } from '../relevance/relevance-evaluator.js';
import { decideStates, type Decision } from './decide-states.js';
import { LateMoves } from './late-moves.js';
import { type Move, type Movers, type ProgressListener, runFleetMoves } from './move-runner.js';
import { type AgentOperation, operationTarget } from './operation-target.js';
import { FleetOperations } from './operations.js';
import type { Journal } from './reconcile-journal.js';
import { scoredAgents } from './scored-agents.js';

export type { ProgressListener } from './move-runner.js';

export interface FleetControllerOptions {
  config: ThymosConfig;
  /** The agents this controller reconciles: every agent of the domain on one host; on several, those its host is given. */
  agents: readonly string[];
  registry: AgentRegistry;
  processes: ProcessManager;
  nc: NatsConnection;
  /** The fleet's subjects, streams and consumers. */
  names: FleetNames;
  /** Control requests to agents. */
  link: AgentLink;
  evaluator: RelevanceEvaluator;
  metrics: SupervisorMetrics;
  logger: Logger;
  /** Which agents this supervisor may move: each is claimed before the first reconcile. */
  ownership: AgentOwnership;
  /** Every move of one agent, step by step. */
  transitions: AgentTransitions;
  ports: PortAllocator;
  heartbeats: AgentHeartbeats;
  journal: Journal;
  /** Agents held in a state by configuration. */
  pins: ReadonlyMap<string, LifecycleState>;
  /** JetStream, when the server has it: agents' event consumers are kept here. */
  jsm?: JetStreamManager | undefined;
}

/** How a reconcile runs: see `FleetController.reconcile`. */
export interface ReconcileOptions {
  dryRun?: boolean | undefined;
  strict?: boolean | undefined;
  onProgress?: ProgressListener | undefined;
  only?: ReadonlySet<string> | undefined;
  returnAfterWakes?: boolean | undefined;
}

/**
 * Reconciles the fleet: scores agents, decides their states, plans transitions and runs them
 * through pm2 with bounded concurrency, one operation at a time (see FleetOperations).
 */
export class FleetController {
  readonly #o: FleetControllerOptions;
  readonly #agents: ReadonlySet<string>;
  readonly #operations = new FleetOperations();
  readonly #late = new LateMoves();
  readonly #movers: Movers;

  constructor(options: FleetControllerOptions) {
    this.#o = options;
    this.#agents = new Set(options.agents);
    this.#movers = { ...options, late: this.#late, operations: this.#operations };
  }

  /** The agents this controller reconciles. */
  get ids(): string[] {
    return [...this.#agents];
  }

  /**
   * Takes over after a (re)start: agents pm2 still runs are adopted with their pid, port
   * and mode; agents the registry thought running but pm2 no longer runs become Dormant.
   */
  adopt(): Promise<{ adopted: string[]; lost: string[] }> {
    return this.#operations.run(async () => {
      const ids = (await this.#claim()).granted;
      const notHeld = new Set([...this.#agents].filter((id) => !ids.includes(id)));
      const result = await adoptAgents({
        ...this.#o,
        ids,
        notHeld,
        leaseFits: (id, lease) => runsUnderClaim(this.#o.ownership, id, lease),
      });
      const kept = this.#o.registry.all().filter((e) => e.state !== 'archived');
      await this.#ensureConsumers(kept.map((e) => e.id));
      this.#o.metrics.setCounts(this.counts());
      this.#o.logger.info(result, 'fleet adopted');
      return result;
    });
  }

  /**
   * Claims every agent given: the ones granted are adopted and reconciled; one another supervisor holds
   * is left alone, named in the log and in `refused` (a transition of an agent not held fails with NOT_OWNER).
   */
  async #claim(missingOnly = false): Promise<{ granted: string[]; refused: Map<string, string> }> {
    const granted: string[] = [];
    const refused = new Map<string, string>();
    for (const id of this.#agents) {
      if (missingOnly && this.#o.ownership.holds(id) !== undefined) continue;
      await this.#o.ownership.claim(id).then(
        () => granted.push(id),
        (err: unknown) => refused.set(id, toThymosError(err).message),
      );
    }
    for (const [agent, err] of refused) this.#o.logger.warn({ agent, err }, 'agent not claimed: another supervisor owns it');
    return { granted, refused };
  }

  /** Dormant agents keep what arrives: every agent not archived has its durable consumer. */
  async #ensureConsumers(ids: readonly string[]): Promise<void> {
    const jsm = this.#o.jsm;
    if (!jsm) return;
    const queue = new PQueue({ concurrency: 8 });
    await Promise.all(ids.map((id) => queue.add(() => ensureAgentConsumer(jsm, id, this.#o.config.events, this.#o.names))));
  }

  /**
   * Level-triggered and idempotent: the same context twice changes nothing the second time.
   * With `only`, the other agents stay as they are, unscored (the work relevance's rounds); such a
   * reconcile is not journaled (the next round redoes it) and leaves `settled` to the next caller.
   * With `returnAfterWakes`, the answer comes once the moves up are done, with the moves down
   * still running named in `pending`; they finish inside this operation all the same, so the next
   * operation waits for them, and its report carries their outcome as `settled`.
   */
  reconcile(context: ReconcileContext, options: ReconcileOptions = {}): Promise<ReconcileReport> {
    let warnings: string[];
    try {
      warnings = this.#o.evaluator.checkContext(context, options.strict);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    for (const w of warnings) this.#o.logger.warn(w);
    const queued = new PhaseClock();
    let answer: (r: ReconcileReport) => void = () => undefined;
    const answered = new Promise<ReconcileReport>((resolve) => (answer = resolve));
    const whole = this.#operations.run(async () => {
      queued.mark('queued');
      const clock = new PhaseClock();
      // Under a lease, what another host held is granted once its lease ended; an agent of the context it still holds is named.
      const { granted, refused } = !options.dryRun && !options.only ? await this.#claim(true) : { granted: [], refused: new Map() };
      if (granted.length > 0) await this.#o.registry.ensure(granted).then(() => this.#ensureConsumers(granted));
      for (const id of Object.keys(context.agents)) if (refused.has(id)) warnings.push(`${refused.get(id)}: not moved by this host`);
      const decisions = await this.decide(context, Date.now(), options.only);
      clock.mark('decide');
      this.#o.metrics.decisionSeconds.observe(clock.elapsed() / 1000);
      // Taken when the answer is made, so a reconcile that throws, a dry run or a work round leaves it to the next caller.
      let settled: ReconcileReport['settled'];
      let taken = false;
      const reply = (r: Report, pending?: readonly string[]): ReconcileReport => {
        if (!taken && !options.only && !options.dryRun) settled = this.#late.take();
        taken = true;
        return {
          ...r,
          warnings,
          dry_run: options.dryRun ?? false,
          duration_ms: clock.elapsed(),
          ...(pending?.length ? { pending: [...pending].sort() } : {}),
          ...(settled ? { settled } : {}),
        };
      };
      const early = options.returnAfterWakes ? (r: Report, pending: readonly string[]) => answer(reply(r, pending)) : undefined;
      const report = await this.#apply(decisions, context, { ...options, early });
      // A work round (`only`) never began the journal: the one it would end is an interrupted reconcile's.
      if (!options.dryRun && !options.only) await this.#o.journal.end();
      clock.mark('moves');
      const duration = clock.elapsed();
      this.#o.metrics.reconcileSeconds.observe(duration / 1000);
      const late = this.#late.waiting();
      if (moveCount(report) > 0 || report.failed.length > 0 || late) {
        const counts = { started: report.started.length, stopped: report.stopped.length, failed: report.failed.length };
        const phases = { ...queued.phases, ...clock.phases };
        this.#o.logger.info({ ms: duration, phases, ...counts, ...(late ? { for_the_next_report: late } : {}) }, 'reconcile done');
      }
      const whole = reply(report);
      answer(whole);
      return whole;
    });
    whole.catch((err: unknown) => this.#o.logger.error({ err: toThymosError(err).message }, 'reconcile failed'));
    return Promise.race([answered, whole]);
  }

  /** Scores every agent and decides its state (no process action). */
  async decide(
    context: ReconcileContext,
    now = Date.now(),
    only?: ReadonlySet<string>,
  ): Promise<Array<Decision & { score: number; source: string; error?: ThymosError | undefined }>> {
    const entries = this.#o.registry.all().filter((e) => this.#agents.has(e.id));
    const scores = await this.#o.evaluator.scoreAll(
      entries.filter((e) => !only || only.has(e.id)).map((e) => ({ id: e.id, running: RUNNING(e.state) })),
      context,
    );
    const { scored, errors, held } = scoredAgents(entries, scores, this.#o.pins, this.#o.logger);
    const decisions = decideStates(scored, this.#o.config.lifecycle, now);
    return scored.map((s) => ({
      ...decisions.get(s.id)!,
      score: s.score,
      source: errors.has(s.id) ? 'error' : (held.get(s.id) ?? s.source),
      error: errors.get(s.id),
    }));
  }

  async #apply(
    decisions: Array<Decision & { score: number; source: string; error?: ThymosError }>,
    context: ReconcileContext,
    options: ReconcileOptions & { early?: ((r: Report, pending: readonly string[]) => void) | undefined },
  ): Promise<Report> {
    const report = emptyReport();
    const moves: Move[] = [];
    const rescored: Array<{ id: string; score: number; source: string }> = [];
    for (const d of decisions) {
      const entry = this.#o.registry.get(d.id)!;
      if (d.error) {
        report.failed.push({ id: d.id, code: d.error.code, message: d.error.message });
        continue;
      }
      if (entry.score !== d.score || entry.source !== d.source) rescored.push({ id: d.id, score: d.score, source: d.source });
      if (d.state === entry.state) report.unchanged.push(d.id);
      else
        moves.push({
          entry: { ...entry, score: d.score, source: d.source },
          to: d.state,
          score: d.score,
          reason: d.reason,
          properties: this.#o.evaluator.propertiesOf(d.id, context),
        });
    }
    if (options.dryRun) {
      for (const m of moves) describeMove(report, m.entry.state, m.to, m.entry.id);
      return sortReport(report);
    }
    await this.#o.registry.updateScores(rescored);
    this.#o.evaluator.observe(context);
    if (moves.length > 0 && !options.only) await this.#o.journal.begin(context);
    await runFleetMoves(
      this.#movers,
      moves,
      report,
      options.onProgress,
      options.early && ((pending) => options.early!(sortReport(report), pending)),
    );
    this.#o.metrics.setCounts(this.counts());
    return sortReport(report);
  }

  /**
   * Finishes the reconcile a killed supervisor left unfinished (its journal is still there),
   * after `adopt`. Reconciles are level-triggered, so running the same context again moves
   * only the agents the first run did not reach. Resolves to undefined when there is nothing
   * to finish; a journal that cannot be read or no longer fits the domain is set aside as
   * `reconcile.pending.json.bad` with an error in the log.
   */
  async resumeInterrupted(): Promise<{ since: string; report: ReconcileReport } | undefined> {
    const { logger } = this.#o;
    const resumed = await this.#o.journal.resume(async (context, since) => {
      logger.warn({ since }, 'finishing a reconcile interrupted by a supervisor restart');
      const report = await this.reconcile(context);
      logger.info(
        { since, started: report.started, stopped: report.stopped, failed: report.failed.map((f) => f.id) },
        'interrupted reconcile finished',
      );
      return report;
    });
    return resumed && { since: resumed.since, report: resumed.result };
  }

  /**
   * The claims on `ids` were lost, or their agents stopped themselves at their fence: each that runs is
   * stopped with no snapshot and recorded Dormant with `reason`. Safe to repeat: a stopped agent stays so.
   */
  abandon(ids: readonly string[], reason: string): Promise<void> {
    return this.#operations.run(async () => {
      for (const entry of ids.map((id) => this.#o.registry.get(id)))
        if (entry && RUNNING(entry.state)) await this.#o.transitions.abandon(entry, reason);
      this.#o.metrics.setCounts(this.counts());
    });
  }

  /** Whether `id` is still moving down after its reconcile answered: it runs, but not for long. */
  stopping(id: string): boolean {
    return this.#late.moving(id);
  }

  /**
   * One agent, one command (CLI `start|stop|archive|restore`): bypasses scores, not pins or
   * capacity. With `settled`, its report carries what an earlier reconcile's late moves did.
   */
  operate(
    op: AgentOperation,
    id: string,
    options: { mode?: AgentMode; onProgress?: ProgressListener; settled?: boolean } = {},
  ): Promise<ReconcileReport> {
    if (!this.#agents.has(id)) {
      return Promise.reject(
        new ThymosError(ErrorCode.AGENT_NOT_FOUND, `no agent "${id}" in the domain schema; expected one of ${agentIdsPreview(this.ids)}`),
      );
    }
    return this.#operations.run(async () => {
      const started = performance.now();
      const entry = this.#o.registry.get(id)!;
      const to = operationTarget(op, entry, {
        mode: options.mode,
        pinned: this.#o.pins.get(id),
        all: this.#o.registry.all(),
        lifecycle: this.#o.config.lifecycle,
      });
      const settled = options.settled ? this.#late.take() : undefined;
      const report = emptyReport();
      if (to === entry.state) report.unchanged.push(id);
      else await runFleetMoves(this.#movers, [{ entry, to, score: entry.score, reason: `command ${op}` }], report, options.onProgress);
      return this.#commandReport(report, started, settled);
    });
  }

  /** The report of one command: what it moved, and what an earlier reconcile's late moves did when `settled` is given. */
  #commandReport(report: Report, started: number, settled: ReconcileReport['settled']): ReconcileReport {
    this.#o.metrics.setCounts(this.counts());
    return { ...sortReport(report), dry_run: false, duration_ms: Math.round(performance.now() - started), ...(settled ? { settled } : {}) };
  }

  /** Stops every running agent this controller reconciles, with a snapshot (what `thymos down` does first). */
  stopAll(options: { onProgress?: ProgressListener } = {}): Promise<ReconcileReport> {
    return this.#operations.run(async () => {
      const started = performance.now();
      const settled = this.#late.take();
      const report = emptyReport();
      const moves = this.#o.registry
        .all()
        .filter((e) => RUNNING(e.state) && this.#agents.has(e.id))
        .map((entry) => ({ entry, to: 'dormant' as const, score: entry.score, reason: 'fleet down' }));
      await runFleetMoves(this.#movers, moves, report, options.onProgress);
      return this.#commandReport(report, started, settled);
    });
  }

  /** Listens to heartbeats: keeps RSS and the agents' model totals (for /metrics). */
  watchHeartbeats(): void {
    this.#o.heartbeats.watch(this.#o.nc, this.#o.names, this.#o.metrics);
  }

  /** The fleet as it is: registry rows with pid, RSS and restarts from pm2. */
  async status(): Promise<Omit<FleetStatus, 'supervisor'>> {
    const apps = new Map((await this.#o.processes.list()).map((p) => [p.name, p]));
    const agents = this.#o.registry
      .all()
      .filter((e) => this.#agents.has(e.id))
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((e) => {
        const app = apps.get(Pm2Names.agent(e.id));
        return statusRow(e, {
          host: this.#o.config.host.name,
          app,
          rss: this.#o.heartbeats.rss(e.id),
          pinned: this.#o.pins.get(e.id),
          routed: this.#o.metrics.routedTo(e.id),
        });
      });
    return { counts: this.counts(), agents };
  }

  history(id: string, limit: number) {
    if (!this.#agents.has(id)) throw new ThymosError(ErrorCode.AGENT_NOT_FOUND, `no agent "${id}" in the domain schema`);
    return this.#o.registry.history(id, limit);
  }

  counts(): Record<LifecycleState, number> {
    const counts = { active: 0, listening: 0, dormant: 0, archived: 0 };
    for (const e of this.#o.registry.all()) if (this.#agents.has(e.id)) counts[e.state]++;
    return counts;
  }

  /** Waits for the operation in progress to finish. */
  idle = (): Promise<void> => this.#operations.idle();

  /** Settles once no operation is waking agents (see FleetOperations): the warm pool refills then. */
  wakesDone = (): Promise<void> => this.#operations.wakesDone();
}
