import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import PQueue from 'p-queue';
import { aliasTable, type AliasEntry } from '../../shared/domain/alias-table.js';
import { AgentStatusMessageSchema, type AgentMode } from '../../shared/protocol/agent-protocol.js';
import { isAlive } from '../../shared/platform/data-lock.js';
import type { DomainSchema, LifecycleState } from '../../shared/domain/domain-schema.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import { deleteAgentConsumer, ensureAgentConsumer } from '../../shared/nats/event-stream.js';
import { Pm2Names, type FleetPaths } from '../../shared/config/fleet-paths.js';
import type { Logger } from '../../shared/platform/logger.js';
import { parseReconcileContext, type ReconcileContext } from '../../shared/protocol/reconcile-context.js';
import type { FleetNames } from '../../shared/protocol/fleet-names.js';
import { parseInput } from '../../shared/errors/zod-issues.js';
import { AgentStartContextSchema, type AgentStartContextInput } from '../../shared/protocol/agent-start-context.js';
import type { AgentStatusRow, FleetStatus, ProgressMessage, ReconcileReport } from '../../shared/protocol/supervisor-protocol.js';
import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import { AgentArchive } from './agent-archive.js';
import { AgentLink } from './agent-link.js';
import type { AgentEntry, AgentRegistry } from './agent-registry.js';
import { decideStates, STATE_RANK, type Decision, type ScoredAgent } from './decide-states.js';
import { probeMcp } from './mcp-probe.js';
import { readAgentToken } from '../../shared/platform/agent-token.js';
import { PortAllocator } from './port-allocator.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import type { RelevanceEvaluator } from './relevance-evaluator.js';
import type { SupervisorMetrics } from './supervisor-metrics.js';
import { parseJsonOrUndefined } from '../../shared/protocol/parse-json.js';

export interface FleetControllerOptions {
  config: ThymosConfig;
  domain: DomainSchema;
  paths: FleetPaths;
  registry: AgentRegistry;
  processes: ProcessManager;
  nc: NatsConnection;
  /** The fleet's subjects, streams and consumers. */
  names: FleetNames;
  /** Control requests to agents. */
  link: AgentLink;
  natsUrl: string;
  evaluator: RelevanceEvaluator;
  metrics: SupervisorMetrics;
  logger: Logger;
  /** The bundled `thymos` command agents run. */
  thymosBin: string;
  /** JetStream, when the server has it: agents' event consumers are kept here. */
  jsm?: JetStreamManager | undefined;
  /** Called when an agent stops running (Dormant or Archived): its live subscriptions end. */
  onStopped?: ((id: string) => Promise<unknown>) | undefined;
}

/** Called as each agent's transition finishes. */
export type ProgressListener = (p: ProgressMessage) => void;

type Report = Omit<ReconcileReport, 'duration_ms' | 'dry_run'>;

/** One agent to move, and the context properties it starts with (its location, say). */
interface Move {
  entry: AgentEntry;
  to: LifecycleState;
  score: number | null;
  reason: string;
  properties?: Record<string, unknown>;
}

const RUNNING = (s: LifecycleState) => s === 'active' || s === 'listening';
/** Deadline of a quick control request to an agent (get_state, set_mode). */
const CONTROL_TIMEOUT_MS = 5000;

/**
 * Reconciles the fleet: scores agents, decides their states, plans transitions and
 * runs them through pm2 with bounded concurrency. Operations (reconciles, single-agent
 * commands, adoption) run one at a time, so one agent never has two transitions in flight
 * and never two processes.
 */
export class FleetController {
  readonly #o: FleetControllerOptions;
  readonly #link: AgentLink;
  readonly #ports: PortAllocator;
  readonly #archive: AgentArchive;
  readonly #operations = new PQueue({ concurrency: 1 });
  readonly #rss = new Map<string, number>();
  readonly #pins = new Map<string, LifecycleState>();
  readonly #aliases: AliasEntry[];

  constructor(options: FleetControllerOptions) {
    this.#o = options;
    this.#aliases = aliasTable(options.domain);
    this.#link = options.link;
    this.#ports = new PortAllocator({ min: options.config.supervisor.agent_port_min, max: options.config.supervisor.agent_port_max, host: options.config.agent.host });
    this.#archive = new AgentArchive(options.paths);
    for (const [id, def] of Object.entries(options.domain.agents)) if (def.pinned) this.#pins.set(id, def.pinned);
    for (const [id, state] of Object.entries(options.config.lifecycle.pins)) this.#pins.set(id, state);
    checkPins(this.#pins, options);
  }

  get ids(): string[] {
    return Object.keys(this.#o.domain.agents);
  }

  /**
   * Takes over after a (re)start: agents pm2 still runs are adopted with their pid, port
   * and mode; agents the registry thought running but pm2 no longer runs become Dormant.
   */
  adopt(): Promise<{ adopted: string[]; lost: string[] }> {
    return this.#operations.add(async () => {
      const { registry, processes, logger } = this.#o;
      await registry.ensure(this.ids);
      const apps = new Map((await processes.list()).map((p) => [p.name, p]));
      const adopted: string[] = [];
      const lost: string[] = [];
      for (const entry of registry.all()) {
        let app = apps.get(Pm2Names.agent(entry.id));
        apps.delete(Pm2Names.agent(entry.id));
        // An agent pm2 is still starting (restarted after a crash, not ready yet) is waited for, not lost.
        if (app?.status === 'launching') app = await processes.settled(app.name, this.#o.config.supervisor.start_timeout_ms);
        if (app && app.status === 'online' && app.pid) {
          let mode: AgentMode = entry.mode ?? 'active';
          let port = entry.port;
          try {
            const { state } = await this.#link.control(entry.id, { op: 'get_state' }, CONTROL_TIMEOUT_MS);
            mode = state.mode;
            port = state.port;
          } catch (err) {
            logger.warn({ agent: entry.id, err: toThymosError(err).message }, 'adopted agent did not answer get_state; keeping the registry mode');
          }
          if (port != null) this.#ports.hold(port);
          await registry.update(entry.id, {
            state: mode === 'active' ? 'active' : 'listening',
            mode,
            pid: app.pid,
            port,
            since: RUNNING(entry.state) ? entry.since : Date.now(),
          });
          adopted.push(entry.id);
        } else {
          if (app) await processes.delete(app.name).catch(() => undefined);
          if (RUNNING(entry.state)) {
            await this.#setState(entry, 'dormant', { mode: null, pid: null }, 'not running when the supervisor started');
            lost.push(entry.id);
          }
        }
      }
      for (const name of apps.keys()) {
        const id = Pm2Names.agentId(name);
        if (id) logger.warn({ app: name }, 'pm2 runs an agent the domain schema does not define; leaving it alone');
      }
      await this.#ensureConsumers(registry.all().filter((e) => e.state !== 'archived').map((e) => e.id));
      this.#updateCounts();
      logger.info({ adopted, lost }, 'fleet adopted');
      return { adopted, lost };
    });
  }

  /** Dormant agents keep what arrives: every agent not archived has its durable consumer. */
  async #ensureConsumers(ids: readonly string[]): Promise<void> {
    const jsm = this.#o.jsm;
    if (!jsm) return;
    const queue = new PQueue({ concurrency: 8 });
    await Promise.all(ids.map((id) => queue.add(() => ensureAgentConsumer(jsm, id, this.#o.config.events, this.#o.names))));
  }

  /** Level-triggered and idempotent: the same context twice changes nothing the second time. */
  reconcile(context: ReconcileContext, options: { dryRun?: boolean; onProgress?: ProgressListener } = {}): Promise<ReconcileReport> {
    for (const id of Object.keys(context.agents)) {
      if (!this.#o.domain.agents[id]) {
        return Promise.reject(
          new ThymosError(ErrorCode.INVALID_CONTEXT, `context: agents.${id}: no agent "${id}" in the domain schema; expected one of ${preview(this.ids)}`, {
            location: { path: `agents.${id}` },
          }),
        );
      }
    }
    return this.#operations.add(async () => {
      const started = performance.now();
      const decisions = await this.decide(context);
      this.#o.metrics.decisionSeconds.observe((performance.now() - started) / 1000);
      const report = await this.#apply(decisions, context, options);
      if (!options.dryRun) this.#endJournal();
      const duration = performance.now() - started;
      this.#o.metrics.reconcileSeconds.observe(duration / 1000);
      return { ...report, dry_run: options.dryRun ?? false, duration_ms: Math.round(duration) };
    });
  }

  /** Scores every agent and decides its state (no process action). */
  async decide(context: ReconcileContext, now = Date.now()): Promise<Array<Decision & { score: number; source: string; error?: ThymosError | undefined }>> {
    const entries = this.#o.registry.all().filter((e) => this.#o.domain.agents[e.id]);
    const scores = await this.#o.evaluator.scoreAll(entries.map((e) => ({ id: e.id, running: RUNNING(e.state) })), context);
    const errors = new Map<string, ThymosError>();
    const scored: ScoredAgent[] = entries.map((e) => {
      const s = scores.get(e.id)!;
      if (s instanceof ThymosError) {
        // A broken score leaves the agent where it is (held like a pin); the report names the failure.
        this.#o.logger.warn({ agent: e.id, err: s.message }, 'scoring failed');
        errors.set(e.id, s);
        return { id: e.id, current: e.state, since: e.since, score: e.score ?? 0, source: 'default', pinned: e.state };
      }
      return { id: e.id, current: e.state, since: e.since, score: s.score, source: s.source, pinned: this.#pins.get(e.id) };
    });
    const decisions = decideStates(scored, this.#o.config.lifecycle, now);
    return scored.map((s) => ({ ...decisions.get(s.id)!, score: s.score, source: errors.has(s.id) ? 'error' : s.source, error: errors.get(s.id) }));
  }

  async #apply(
    decisions: Array<Decision & { score: number; source: string; error?: ThymosError }>,
    context: ReconcileContext,
    options: { dryRun?: boolean; onProgress?: ProgressListener },
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
      else moves.push({ entry: { ...entry, score: d.score, source: d.source }, to: d.state, score: d.score, reason: d.reason, properties: this.#o.evaluator.propertiesOf(d.id, context) });
    }
    if (!options.dryRun) await this.#o.registry.updateScores(rescored);
    if (options.dryRun) {
      for (const m of moves) describeMove(report, m.entry.state, m.to, m.entry.id);
      return sortReport(report);
    }
    if (moves.length > 0) this.#beginJournal(context);
    await this.#runMoves(moves, report, options.onProgress);
    this.#updateCounts();
    return sortReport(report);
  }

  get #journalFile(): string {
    return join(this.#o.paths.run, 'reconcile.pending.json');
  }

  /**
   * Notes the context of a reconcile that is about to move agents, so a supervisor killed
   * before it ends finishes it after its restart (`resumeInterrupted`). Written atomically:
   * a crash leaves the previous file or the new one, never half of one.
   */
  #beginJournal(context: ReconcileContext): void {
    try {
      mkdirSync(this.#o.paths.run, { recursive: true });
      writeAtomic(this.#journalFile, JSON.stringify({ at: new Date().toISOString(), context }));
    } catch (err) {
      this.#o.logger.warn({ err: (err as Error).message }, 'the reconcile journal was not written: a crash now would leave this reconcile unfinished');
    }
  }

  #endJournal(): void {
    try {
      rmSync(this.#journalFile, { force: true });
    } catch (err) {
      this.#o.logger.warn({ err: (err as Error).message }, 'the reconcile journal was not removed: a restart would run this finished reconcile again (harmless: nothing left to move)');
    }
  }

  /**
   * Finishes the reconcile a killed supervisor left unfinished (its journal is still there),
   * after `adopt`. Reconciles are level-triggered, so running the same context again moves
   * only the agents the first run did not reach. Resolves to undefined when there is nothing
   * to finish; a journal that cannot be read or no longer fits the domain is set aside as
   * `reconcile.pending.json.bad` with an error in the log.
   */
  async resumeInterrupted(): Promise<{ since: string; report: ReconcileReport } | undefined> {
    let text: string;
    try {
      text = readFileSync(this.#journalFile, 'utf8');
    } catch {
      return undefined;
    }
    const { logger } = this.#o;
    try {
      const raw = JSON.parse(text) as { at?: unknown; context?: unknown };
      const since = typeof raw.at === 'string' ? raw.at : 'unknown';
      const context = parseReconcileContext(raw.context, `${this.#journalFile}: context`);
      logger.warn({ since }, 'finishing a reconcile interrupted by a supervisor restart');
      const report = await this.reconcile(context);
      logger.info({ since, started: report.started, stopped: report.stopped, failed: report.failed.map((f) => f.id) }, 'interrupted reconcile finished');
      return { since, report };
    } catch (err) {
      const e = toThymosError(err);
      logger.error({ code: e.code, err: e.message, file: this.#journalFile }, 'the interrupted reconcile could not be finished; its journal is set aside');
      try {
        renameSync(this.#journalFile, `${this.#journalFile}.bad`);
      } catch {
        // Already gone: nothing to set aside.
      }
      return undefined;
    }
  }

  /** Moves down first (freeing capacity and ports), then up; each phase with bounded concurrency. */
  async #runMoves(
    moves: Move[],
    report: Report,
    onProgress: ProgressListener | undefined,
  ): Promise<void> {
    const total = moves.length;
    let done = 0;
    const queue = new PQueue({ concurrency: this.#o.config.supervisor.concurrency });
    const run = (m: (typeof moves)[number]) =>
      queue.add(async () => {
        const t0 = performance.now();
        const ok = await this.#transition(m.entry.id, m.to, m.score, m.reason, report, m.properties ?? {});
        onProgress?.({ id: m.entry.id, step: `${m.entry.state} → ${m.to}`, done: ++done, total, ok, ms: Math.round(performance.now() - t0) });
      });
    const down = moves.filter((m) => STATE_RANK[m.to] < STATE_RANK[m.entry.state]);
    const up = moves.filter((m) => STATE_RANK[m.to] > STATE_RANK[m.entry.state]);
    await Promise.all(down.map(run));
    await Promise.all(up.map(run));
  }

  /** One agent, one command (CLI `start|stop|archive|restore`): bypasses scores, not pins or capacity. */
  operate(op: 'start' | 'stop' | 'archive' | 'restore', id: string, options: { mode?: AgentMode; onProgress?: ProgressListener } = {}): Promise<ReconcileReport> {
    if (!this.#o.domain.agents[id]) {
      return Promise.reject(new ThymosError(ErrorCode.AGENT_NOT_FOUND, `no agent "${id}" in the domain schema; expected one of ${preview(this.ids)}`));
    }
    return this.#operations.add(async () => {
      const started = performance.now();
      const entry = this.#o.registry.get(id)!;
      let to: LifecycleState;
      switch (op) {
        case 'start':
          to = options.mode === 'passive' ? 'listening' : 'active';
          break;
        case 'stop':
          to = 'dormant';
          break;
        case 'archive':
          to = 'archived';
          break;
        case 'restore':
          to = entry.state === 'archived' ? 'dormant' : entry.state;
          break;
      }
      const pinned = this.#pins.get(id);
      if (pinned && pinned !== to) {
        throw new ThymosError(ErrorCode.AGENT_PINNED, `${id} is pinned to ${pinned} by configuration ([lifecycle] pins or the Pkl schema's pinned); ${op} would make it ${to}`);
      }
      if (RUNNING(to) && !RUNNING(entry.state)) {
        const running = this.#o.registry.all().filter((e) => RUNNING(e.state)).length;
        if (running >= this.#o.config.lifecycle.max_running) {
          throw new ThymosError(ErrorCode.CAPACITY_EXCEEDED, `cannot start ${id}: ${running} agents already run and [lifecycle] max_running is ${this.#o.config.lifecycle.max_running}`);
        }
      }
      if (to === 'active' && entry.state !== 'active') {
        const active = this.#o.registry.all().filter((e) => e.state === 'active').length;
        if (active >= this.#o.config.lifecycle.max_active) {
          throw new ThymosError(ErrorCode.CAPACITY_EXCEEDED, `cannot make ${id} active: ${active} agents already are and [lifecycle] max_active is ${this.#o.config.lifecycle.max_active}`);
        }
      }
      const report = emptyReport();
      if (to === entry.state) report.unchanged.push(id);
      else await this.#runMoves([{ entry, to, score: entry.score, reason: `command ${op}` }], report, options.onProgress);
      this.#updateCounts();
      return { ...sortReport(report), dry_run: false, duration_ms: Math.round(performance.now() - started) };
    });
  }

  /** Stops every running agent with a snapshot (what `thymos down` does first). */
  stopAll(options: { onProgress?: ProgressListener } = {}): Promise<ReconcileReport> {
    return this.#operations.add(async () => {
      const started = performance.now();
      const report = emptyReport();
      const moves = this.#o.registry
        .all()
        .filter((e) => RUNNING(e.state))
        .map((entry) => ({ entry, to: 'dormant' as const, score: entry.score, reason: 'fleet down' }));
      await this.#runMoves(moves, report, options.onProgress);
      this.#updateCounts();
      return { ...sortReport(report), dry_run: false, duration_ms: Math.round(performance.now() - started) };
    });
  }

  /** Runs the steps from an agent's state to `to`; records each in the report. Never throws. */
  async #transition(id: string, to: LifecycleState, score: number | null, reason: string, report: Report, properties: Record<string, unknown>): Promise<boolean> {
    const from = this.#o.registry.get(id)!.state;
    const { metrics, logger } = this.#o;
    let step = 'plan';
    try {
      let entry = this.#o.registry.get(id)!;
      if (RUNNING(entry.state) && RUNNING(to)) {
        step = 'set_mode';
        await this.#setMode(entry, to === 'active' ? 'active' : 'passive', reason);
        (STATE_RANK[to] > STATE_RANK[from] ? report.upgraded : report.downgraded).push(id);
        metrics.transitions.inc({ kind: STATE_RANK[to] > STATE_RANK[from] ? 'upgrade' : 'downgrade' });
      } else {
        if (RUNNING(entry.state)) {
          step = 'stop';
          entry = await this.#stop(entry, reason);
          report.stopped.push(id);
          metrics.transitions.inc({ kind: 'stop' });
        }
        if (entry.state === 'archived' && to !== 'archived') {
          step = 'restore';
          await this.#archive.unpack(id);
          if (this.#o.jsm) await ensureAgentConsumer(this.#o.jsm, id, this.#o.config.events, this.#o.names);
          entry = await this.#setState(entry, 'dormant', {}, reason);
          report.restored.push(id);
          metrics.transitions.inc({ kind: 'restore' });
        }
        if (to === 'archived' && entry.state === 'dormant') {
          step = 'archive';
          await this.#archive.pack(id);
          // An Archived agent stops retaining events.
          if (this.#o.jsm) await deleteAgentConsumer(this.#o.jsm, id, this.#o.names);
          entry = await this.#setState(entry, 'archived', { port: null }, reason);
          report.archived.push(id);
          metrics.transitions.inc({ kind: 'archive' });
        }
        if (RUNNING(to) && entry.state === 'dormant') {
          step = 'start';
          await this.#start(entry, to === 'active' ? 'active' : 'passive', score, reason, properties);
          report.started.push(id);
          metrics.transitions.inc({ kind: 'start' });
        }
      }
      return true;
    } catch (err) {
      const e = toThymosError(err);
      logger.error({ agent: id, step, code: e.code, err: e.message }, 'transition failed');
      metrics.failures.inc({ kind: step, code: e.code });
      report.failed.push({ id, code: e.code, message: e.message });
      const entry = this.#o.registry.get(id)!;
      await this.#o.registry.update(id, { last_error: { code: e.code, message: e.message } }).catch(() => undefined);
      await this.#o.registry
        .recordTransition({ id, at: new Date().toISOString(), from: entry.state, to, score, reason: `${reason} (${step})`, ok: false, error: `${e.code}: ${e.message}` })
        .catch(() => undefined);
      return false;
    }
  }

  async #start(entry: AgentEntry, mode: AgentMode, score: number | null, reason: string, properties: Record<string, unknown>): Promise<AgentEntry> {
    const { config, processes, paths, domain, metrics } = this.#o;
    const id = entry.id;
    const name = Pm2Names.agent(id);
    const existing = await processes.describe(name);
    if (existing?.status === 'online' && existing.pid && isAlive(existing.pid)) {
      // pm2 still runs it (a start that outlived a supervisor crash): adopt rather than start a second copy.
      const { state } = await this.#link.control(id, { op: 'set_mode', mode }, CONTROL_TIMEOUT_MS);
      this.#ports.hold(state.port);
      return this.#setState(entry, mode === 'active' ? 'active' : 'listening', { mode, pid: existing.pid, port: state.port, last_error: null }, `${reason} (adopted)`);
    }
    if (existing) await processes.delete(name);

    const port = await this.#ports.allocate(entry.port);
    const t0 = performance.now();
    const budget = config.supervisor.start_timeout_ms;
    const life = this.#link.waitForLife(id, budget);
    const phases: Record<string, number> = {};
    const mark = (phase: string) => (phases[phase] = Math.round(performance.now() - t0));
    try {
      mkdirSync(paths.run, { recursive: true });
      const contextFile = join(paths.run, `${id}.context.json`);
      // Checked by the schema the agent reads it with, so a supervisor never hands over a context the agent refuses.
      const startContext = parseInput(
        AgentStartContextSchema,
        { definition: domain.agents[id], eventFilters: domain.eventFilters, worldWatches: domain.worldWatches, aliases: this.#aliases, relationshipTypes: domain.relationshipTypes, conceptTypes: domain.conceptTypes, searchStrategies: domain.searchStrategies, properties } satisfies AgentStartContextInput,
        `${id}: start context`,
      );
      writeAtomic(contextFile, JSON.stringify(startContext));
      const args = ['agent', '--agent-id', id, '--port', String(port), '--mode', mode, '--context', contextFile, '--nats-url', this.#o.natsUrl];
      if (config.file) args.push('--config', config.file);
      await processes.start({
        name,
        script: this.#o.thymosBin,
        args,
        cwd: config.file ? join(config.file, '..') : process.cwd(),
        waitReady: true,
        listenTimeoutMs: budget,
        killTimeoutMs: config.agent.shutdown_timeout_ms + 2000,
        autorestart: true,
        restartDelayMs: config.supervisor.restart_delay_ms,
        logFile: join(paths.logs, `${id}.log`),
      });
      mark('pm2_started');
      const watch = { done: false };
      try {
        await Promise.race([life.seen, this.#crashDuringStart(id, name, budget, watch)]);
      } finally {
        watch.done = true;
      }
      mark('nats_ready');
      const left = Math.max(1000, budget - (performance.now() - t0));
      await probeMcp(id, `http://${config.agent.host === '0.0.0.0' ? '127.0.0.1' : config.agent.host}:${port}/mcp`, left, config.mcp.require_token ? readAgentToken(config.dataPath, id) : undefined);
    } catch (err) {
      life.cancel();
      await processes.delete(name).catch(() => undefined);
      this.#ports.release(port);
      const e = toThymosError(err);
      throw new ThymosError(e.code, `${e.message} (log: ${join(paths.logs, `${id}.log`)})`, { cause: err });
    }
    mark('mcp_answered');
    metrics.startupSeconds.observe((performance.now() - t0) / 1000);
    this.#o.logger.info({ agent: id, port, mode, ms_since_start: phases }, 'agent started');
    const info = await processes.describe(name);
    return this.#setState(entry, mode === 'active' ? 'active' : 'listening', { mode, pid: info?.pid ?? null, port, score, last_error: null }, reason);
  }

  /**
   * Rejects as soon as pm2 reports that the agent's process exited while starting (a restart,
   * or an errored app), with the end of its log; never resolves otherwise. Without it a
   * process that cannot start would be retried by pm2 until the whole start budget ran out.
   */
  async #crashDuringStart(id: string, name: string, budget: number, watch: { done: boolean }): Promise<never> {
    const deadline = performance.now() + budget;
    while (!watch.done && performance.now() < deadline) {
      await sleep(250);
      const app = watch.done ? undefined : await this.#o.processes.describe(name).catch(() => undefined);
      if (!watch.done && app && (app.restarts > 0 || app.status === 'errored' || app.status === 'stopped')) {
        throw new ThymosError(ErrorCode.AGENT_START_FAILED, `${id} exited while starting (pm2 status ${app.status}, ${app.restarts} restart(s)); its log ends: ${logTail(join(this.#o.paths.logs, `${id}.log`))}`);
      }
    }
    return new Promise<never>(() => undefined);
  }

  async #setMode(entry: AgentEntry, mode: AgentMode, reason: string): Promise<AgentEntry> {
    await this.#link.control(entry.id, { op: 'set_mode', mode }, CONTROL_TIMEOUT_MS);
    return this.#setState(entry, mode === 'active' ? 'active' : 'listening', { mode }, reason);
  }

  /** Snapshot acknowledged, then pm2 stops the process (SIGINT, SIGKILL after the budget). */
  async #stop(entry: AgentEntry, reason: string): Promise<AgentEntry> {
    const { processes, config } = this.#o;
    const name = Pm2Names.agent(entry.id);
    const app = await processes.describe(name);
    if (app?.status === 'online') {
      await this.#link.control(entry.id, { op: 'snapshot' }, config.agent.shutdown_timeout_ms).catch((err: unknown) => {
        const e = toThymosError(err);
        throw new ThymosError(ErrorCode.SNAPSHOT_FAILED, `${entry.id} was not stopped: its snapshot was not acknowledged (${e.code}: ${e.message})`, { cause: err });
      });
    }
    await processes.delete(name);
    if (app?.pid && isAlive(app.pid)) {
      throw new ThymosError(ErrorCode.PROCESS_MANAGER_ERROR, `${entry.id}: pid ${app.pid} still alive after pm2 stopped it`);
    }
    this.#ports.release(entry.port);
    this.#rss.delete(entry.id);
    return this.#setState(entry, 'dormant', { mode: null, pid: null }, reason);
  }

  async #setState(entry: AgentEntry, state: LifecycleState, patch: Partial<AgentEntry>, reason: string): Promise<AgentEntry> {
    const next = await this.#o.registry.update(entry.id, { ...patch, state, since: state === entry.state ? entry.since : Date.now() });
    if (state !== entry.state && RUNNING(entry.state) && !RUNNING(state)) {
      await this.#o.onStopped?.(entry.id).catch((err: unknown) => this.#o.logger.warn({ err, id: entry.id }, 'ending the live subscriptions of a stopped agent failed'));
    }
    if (state !== entry.state) {
      await this.#o.registry.recordTransition({ id: entry.id, at: new Date().toISOString(), from: entry.state, to: state, score: next.score, reason, ok: true, error: null });
    }
    return next;
  }

  /** Listens to heartbeats: keeps RSS and the agents' model totals (for /metrics). */
  watchHeartbeats(): void {
    const sub = this.#o.nc.subscribe(this.#o.names.allAgentStatus);
    void (async () => {
      for await (const m of sub) {
        const parsed = AgentStatusMessageSchema.safeParse(parseJsonOrUndefined(m.string()));
        if (!parsed.success) continue;
        const { state, rss_bytes } = parsed.data;
        if (rss_bytes !== undefined) this.#rss.set(state.id, rss_bytes);
        if (state.llm) this.#o.metrics.observeLlm(state.id, state.llm);
      }
    })();
  }

  /** The fleet as it is: registry rows with pid, RSS and restarts from pm2. */
  async status(): Promise<Omit<FleetStatus, 'supervisor'>> {
    const apps = new Map((await this.#o.processes.list()).map((p) => [p.name, p]));
    const agents: AgentStatusRow[] = this.#o.registry
      .all()
      .filter((e) => this.#o.domain.agents[e.id])
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((e) => {
        const app = apps.get(Pm2Names.agent(e.id));
        const running = RUNNING(e.state);
        return {
          id: e.id,
          state: e.state,
          mode: running ? e.mode : null,
          pid: running ? (app?.pid ?? e.pid) : null,
          port: running ? e.port : null,
          score: e.score,
          source: e.source,
          since: new Date(e.since).toISOString(),
          rss_bytes: running ? (app?.memory ?? this.#rss.get(e.id) ?? null) : null,
          restarts: app?.restarts ?? 0,
          pinned: this.#pins.get(e.id) ?? null,
          last_error: e.last_error,
        };
      });
    return { counts: this.counts(), agents };
  }

  history(id: string, limit: number) {
    if (!this.#o.domain.agents[id]) throw new ThymosError(ErrorCode.AGENT_NOT_FOUND, `no agent "${id}" in the domain schema`);
    return this.#o.registry.history(id, limit);
  }

  counts(): Record<LifecycleState, number> {
    const counts = { active: 0, listening: 0, dormant: 0, archived: 0 };
    for (const e of this.#o.registry.all()) if (this.#o.domain.agents[e.id]) counts[e.state]++;
    return counts;
  }

  /** Waits for the operation in progress to finish. */
  async idle(): Promise<void> {
    await this.#operations.onIdle();
  }

  #updateCounts(): void {
    this.#o.metrics.setCounts(this.counts());
  }
}

/** Pins from Pkl and `[lifecycle] pins` together must fit the capacity and name defined agents. */
function checkPins(pins: ReadonlyMap<string, LifecycleState>, o: FleetControllerOptions): void {
  const { max_active, max_running } = o.config.lifecycle;
  for (const id of pins.keys()) {
    if (!o.domain.agents[id]) {
      throw new ThymosError(ErrorCode.CONFIG_INVALID, `lifecycle.pins: no agent "${id}" in the domain schema`, { location: { file: o.config.file, path: `lifecycle.pins.${id}` } });
    }
  }
  const active = [...pins.values()].filter((s) => s === 'active').length;
  const running = [...pins.values()].filter((s) => s === 'active' || s === 'listening').length;
  if (active > max_active || running > max_running) {
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `pins (Pkl pinned and [lifecycle] pins) hold ${active} agent(s) active and ${running} running; expected at most max_active = ${max_active} and max_running = ${max_running}`,
      { location: { file: o.config.file, path: 'lifecycle.pins' } },
    );
  }
}

function emptyReport(): Report {
  return { started: [], stopped: [], upgraded: [], downgraded: [], archived: [], restored: [], unchanged: [], failed: [] };
}

function sortReport(r: Report): Report {
  for (const key of ['started', 'stopped', 'upgraded', 'downgraded', 'archived', 'restored', 'unchanged'] as const) r[key].sort();
  r.failed.sort((a, b) => (a.id < b.id ? -1 : 1));
  return r;
}

/** What a move would do, for a dry run. */
function describeMove(r: Report, from: LifecycleState, to: LifecycleState, id: string): void {
  if (RUNNING(from) && RUNNING(to)) (STATE_RANK[to] > STATE_RANK[from] ? r.upgraded : r.downgraded).push(id);
  if (RUNNING(from) && !RUNNING(to)) r.stopped.push(id);
  if (from === 'archived' && to !== 'archived') r.restored.push(id);
  if (to === 'archived') r.archived.push(id);
  if (!RUNNING(from) && RUNNING(to)) r.started.push(id);
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

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

function preview(ids: string[]): string {
  return ids.length > 8 ? `${ids.slice(0, 8).join(', ')}, … (${ids.length})` : ids.join(', ') || '(none defined)';
}
