import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Surreal } from 'surrealdb';

import { type FleetPaths, fleetPaths } from '../../shared/config/fleet-paths.js';
import { readFleetInfo } from '../../shared/config/fleet-runtime.js';
import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import { type DomainSchema, EMPTY_DOMAIN, loadDomainSchema } from '../../shared/domain/domain-schema.js';
import { queueSkills } from '../../shared/domain/queue-schema.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import { watchLastDeliveries } from '../../shared/nats/dead-letter-watch.js';
import { deadLetters, giveUpJob, requeueDeadLetter } from '../../shared/nats/dead-letters.js';
import { ensureEventStream } from '../../shared/nats/event-stream.js';
import { ensureJobQueues, jobBacklog } from '../../shared/nats/job-queue.js';
import { moveLegacyInboxes } from '../../shared/nats/legacy-inbox.js';
import { connectNats, type NatsLink } from '../../shared/nats/nats-connection.js';
import { fleetNatsLink, fleetNatsSeed } from '../../shared/nats/nats-identity.js';
import { domainWork } from '../../shared/nats/nats-permissions.js';
import { CleanupStack } from '../../shared/platform/cleanup-stack.js';
import { CompromiseExtractor } from '../../shared/platform/concept-extractor.js';
import { DataLock } from '../../shared/platform/data-lock.js';
import { withDeadline } from '../../shared/platform/deadline.js';
import { createLogger, type Logger } from '../../shared/platform/logger.js';
import { StopOnce } from '../../shared/platform/stop-once.js';
import { writeAtomic } from '../../shared/platform/write-atomic.js';
import { FleetNames } from '../../shared/protocol/fleet-names.js';
import type { JobGiveUp, ListedDeadLetter, SkillBacklog } from '../../shared/protocol/job.js';
import { ReconcileContextSchema } from '../../shared/protocol/reconcile-context.js';
import { type FleetStatus, SupervisorRequestSchemas, SupervisorResultSchemas } from '../../shared/protocol/supervisor-protocol.js';
import type { ApprovalDecision } from '../../shared/protocol/tool-call.js';
import { AgentEndpoints } from '../api/agent-endpoints.js';
import { ApprovalBook } from '../api/approval-book.js';
import { auditDetails, AuditLog } from '../api/audit-log.js';
import { ControlApi, type Requester } from '../api/control-api.js';
import { ConceptService } from '../embedding/concept-service.js';
import { EmbeddingService } from '../embedding/embedding-service.js';
import { AgentLink } from '../fleet/agent-link.js';
import { AgentPool, type AgentPoolOptions } from '../fleet/agent-pool.js';
import { AgentRegistry } from '../fleet/agent-registry.js';
import { EventRouter, type EventRouterOptions } from '../fleet/event-router.js';
import { FleetController } from '../fleet/fleet-controller.js';
import { fleetPins } from '../fleet/fleet-pins.js';
import { RelevanceEvaluator } from '../fleet/relevance-evaluator.js';
import { SupervisorMetrics } from '../fleet/supervisor-metrics.js';
import { type WorkerState, WorkScores } from '../fleet/work-scores.js';
import { NatsAccess } from '../pm2/nats-access.js';
import { refuseEarlierNatsServer } from '../pm2/nats-server-config.js';
import { ProcessManager } from '../pm2/process-manager.js';
import { thymosBinPath } from '../pm2/thymos-bin.js';
import { worldControlApi } from '../world/world-api.js';
import { openWorldDatabase } from '../world/world-database.js';
import { WorldStore } from '../world/world-store.js';
import { logRefusedConnections } from './refused-connections.js';

export interface SupervisorOptions {
  config: ThymosConfig;
  /** The NATS server to use; `thymos up` passes the one it runs. */
  natsUrl: string;
}

export interface RunningSupervisor {
  controller: FleetController;
  metricsUrl: string;
  stop(reason: string): Promise<void>;
  readonly stopped: Promise<void>;
}

/**
 * Runs the supervisor of one fleet until told to stop: takes the fleet's lock, opens the
 * registry, connects to NATS and pm2, adopts the agents still running, then serves the
 * control API and `/metrics`. Stopping it leaves agents running (`thymos down` stops them first).
 */
export async function runSupervisorProcess(options: SupervisorOptions): Promise<RunningSupervisor> {
  const { config, natsUrl } = options;
  const logger = createLogger({ level: config.log.level, bindings: { component: 'supervisor' } });
  const paths = fleetPaths(config.dataPath);
  const names = new FleetNames(config.fleet.name);
  const cleanup = new CleanupStack();
  try {
    const { db, registry, domain } = await openFleetState(config, paths, cleanup);
    const nc = await connectWithin(natsUrl, NATS_CONNECT_MS, fleetNatsLink(config, 'supervisor', natsUrl));
    cleanup.push(() => closeNats(nc));
    if (readFleetInfo(config)?.managed_nats) {
      // Before any JetStream work: a server still running an earlier version's users is not ours to change.
      refuseEarlierNatsServer(paths, undefined);
      await watchRefusals(config, natsUrl, logger, cleanup);
    }
    const hints = eventHints(await serveTextModels(config, nc, names, logger, cleanup));
    const processes = await ProcessManager.connect(paths.pm2Home);
    cleanup.push(() => processes.disconnect());
    const link = new AgentLink(nc, names);
    const metrics = new SupervisorMetrics();
    const jsm = await ensureEventStream(nc, config.events, names).catch((err: unknown) => {
      logger.warn({ err: (err as Error).message }, 'world events are off: the NATS server has no JetStream');
      return undefined;
    });
    for (const move of jsm ? await moveLegacyInboxes(jsm, config.events, names) : []) {
      logger.info(move, 'inbox of an earlier version emptied into the agent’s inbox of today');
      if (move.skipped > 0)
        logger.warn(move, 'messages in an inbox of an earlier version that are not messages to this agent were left behind');
    }
    const jobs = await openJobQueues(jsm, nc, domain, names, config, logger, cleanup, (id) => registry.get(id));
    const evaluator = await relevanceEvaluator(config, domain, link, jobs.work);
    const world = await WorldStore.open({
      db,
      tables: domain.worldTables,
      nc,
      names,
      leaseMs: config.world.lease_ms,
      maxSubscriptions: config.world.max_subscriptions,
      logger,
    });
    cleanup.push(() => world.close());
    let controller: FleetController | undefined;
    const pool = await openPool(
      { config, paths, processes, logger, natsUrl, thymosBin: thymosBinPath(), wakesDone: async () => controller?.wakesDone() },
      cleanup,
    );
    // Every agent of the domain gets its NATS identity; one that left the domain loses its own.
    const access = new NatsAccess({ config, paths, processes, natsUrl, logger, users: { names, work: domainWork(domain) } });
    await access.sync(Object.keys(domain.agents));
    controller = new FleetController({
      access,
      config,
      domain,
      paths,
      registry,
      processes,
      nc,
      names,
      link,
      natsUrl,
      evaluator,
      metrics,
      logger,
      thymosBin: thymosBinPath(),
      jsm,
      pool,
      onStopped: (id) => world.endOwner(id),
    });
    await controller.adopt();
    controller.watchHeartbeats();
    jobs.work?.start((only) => controller.reconcile(ReconcileContextSchema.parse({}), { only }));
    cleanup.push(() => jobs.work?.stop());
    if (jsm)
      await startRouter(
        { nc, names, domain, settings: config.events, registry, evaluator, hints, onRouted: (ids) => metrics.countRouted(ids), logger },
        cleanup,
      );
    const metricsUrl = await metrics.listen('127.0.0.1', config.supervisor.metrics_port);
    cleanup.push(() => metrics.close());
    const self: FleetStatus['supervisor'] = {
      pid: process.pid,
      started_at: new Date().toISOString(),
      metrics_url: metricsUrl,
      nats_url: natsUrl,
    };
    const audit = new AuditLog(paths.audit, logger);
    const apis = [
      supervisorControlApi(
        nc,
        names,
        {
          controller,
          approvals: await openApprovals(db, link, config, logger, cleanup),
          endpoints: new AgentEndpoints({
            domain,
            config,
            entry: (id) => registry.get(id),
            stopping: (id) => controller!.stopping(id),
            wake: (id, onProgress) => controller!.operate('start', id, { mode: 'active', onProgress }),
          }),
          jobs,
        },
        audit,
        () => ({ ...self, pool: pool?.stats() ?? null }),
        logger,
      ),
      worldControlApi(nc, world, logger, names),
    ];
    for (const api of apis) {
      api.start();
      cleanup.push(() => api.stop());
    }
    await nc.flush();
    mkdirSync(paths.run, { recursive: true });
    writeAtomic(join(paths.run, 'supervisor.json'), JSON.stringify(self, null, 2));

    const stopper = new StopOnce(async (reason) => {
      logger.info({ reason }, 'supervisor stopping');
      for (const api of apis) api.stop();
      await controller.idle();
      await cleanup.run();
      logger.info('supervisor stopped');
    });
    logger.info({ agents: controller.ids.length, nats: natsUrl, metrics: metricsUrl, counts: controller.counts() }, 'supervisor ready');
    process.send?.('ready');
    // A reconcile this supervisor's previous run was killed in the middle of is finished now,
    // behind the same queue as requests, so a status asked meanwhile sees the end of it.
    void finishInterrupted(controller, audit);
    return { controller, metricsUrl, stop: (reason: string) => stopper.stop(reason), stopped: stopper.stopped };
  } catch (err) {
    await cleanup.run();
    logger.flush();
    throw toThymosError(err);
  }
}

/** What the supervisor answers about the work queues, and the work relevance when the domain declares it. */
interface JobQueues {
  work: WorkScores | undefined;
  backlog(queue?: string): Promise<SkillBacklog[]>;
  dead(limit: number, queue?: string): Promise<ListedDeadLetter[]>;
  requeue(seq: number): Promise<{ id: string; queue: string; skill: string; seq: number }>;
  giveUp(agent: string, request: JobGiveUp): Promise<{ seq: number; duplicate: boolean }>;
}

/** The work queues: a stream per queue, a consumer per skill that serves it (shared/nats/job-queue.ts); their backlog and dead letters. */
async function openJobQueues(
  jsm: JetStreamManager | undefined,
  nc: NatsConnection,
  domain: DomainSchema,
  names: FleetNames,
  config: ThymosConfig,
  logger: Logger,
  cleanup: CleanupStack,
  entry: (id: string) => WorkerState | undefined,
): Promise<JobQueues> {
  const skills = queueSkills(domain);
  if (jsm) await ensureJobQueues(jsm, domain.queues, skills, names);
  // A worker that died on a job's last delivery: the job is caught from the advisory.
  const watch = jsm ? watchLastDeliveries(nc, jsm, Object.keys(domain.queues), names, logger) : undefined;
  cleanup.push(() => watch?.unsubscribe());
  const js = () => {
    if (!jsm) throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, 'the NATS server has no JetStream: there are no work queues');
    return jsm;
  };
  const backlog = async (queue?: string) =>
    jsm ? jobBacklog(jsm, queue === undefined ? Object.keys(domain.queues) : [queue], skills, names) : [];
  return {
    work:
      domain.workRelevance && jsm
        ? new WorkScores({
            domain,
            settings: domain.workRelevance,
            lifecycle: config.lifecycle,
            backlog,
            logger,
            concurrency: config.jobs.concurrency,
            entry,
            pins: fleetPins(domain, config),
          })
        : undefined,
    backlog,
    dead: async (limit, queue) => (jsm ? deadLetters(jsm, limit, queue, names) : []),
    requeue: (seq) => requeueDeadLetter(js(), nc, seq, names),
    giveUp: (agent, request) => giveUpJob(js(), nc, agent, request, domainWork(domain), names),
  };
}

/** Routes each world event to the agents that hear it: registered, not Archived, filters matched where they are now. */
async function startRouter(
  o: Omit<EventRouterOptions, 'hearers' | 'locationOf'> & { registry: AgentRegistry; evaluator: RelevanceEvaluator },
  cleanup: CleanupStack,
): Promise<void> {
  const { registry, evaluator, ...options } = o;
  const hearers = () => registry.all().flatMap((e) => (e.state === 'archived' ? [] : [e.id]));
  const router = await EventRouter.start({ ...options, hearers, locationOf: (id) => evaluator.locationOf(id) });
  cleanup.push(() => router.close());
}

/** Takes the fleet's lock and opens its database and registry while the domain schema (a Pkl child process) loads. */
async function openFleetState(
  config: ThymosConfig,
  paths: FleetPaths,
  cleanup: CleanupStack,
): Promise<{ db: Surreal; registry: AgentRegistry; domain: DomainSchema }> {
  const lock = DataLock.acquire(paths.data, {
    file: 'supervisor.pid',
    name: `the supervisor of ${paths.data}`,
    code: ErrorCode.SUPERVISOR_ALREADY_RUNNING,
  });
  cleanup.push(() => lock.release());
  const domainPromise = config.domainSchemaPath
    ? loadDomainSchema(config.domainSchemaPath, { exclude: [config.dataPath] })
    : Promise.resolve(EMPTY_DOMAIN);
  domainPromise.catch(() => undefined);
  const db = await openWorldDatabase(config, paths.world);
  cleanup.push(() => db.close());
  const registry = await AgentRegistry.open(db);
  cleanup.push(() => registry.close());
  return { db, registry, domain: await domainPromise };
}

const NATS_CONNECT_MS = 15_000;

/** The text models the supervisor serves to the fleet. */
interface TextModels {
  concepts?: ConceptService;
  embedding?: EmbeddingService;
}

/** The warm pool when `[supervisor] pool_size` asks for one; spares are started only while no reconcile runs. */
async function openPool(options: AgentPoolOptions, cleanup: CleanupStack): Promise<AgentPool | undefined> {
  if (options.config.supervisor.pool_size === 0) return undefined;
  const pool = await AgentPool.open(options);
  cleanup.push(() => pool.close());
  return pool;
}

/**
 * The managed server's refused connections, read in its system account as the `system` identity
 * and logged (`logRefusedConnections`). Without that identity, or a connection within the
 * deadline, the supervisor runs on and says so: the server refuses strangers all the same.
 */
async function watchRefusals(config: ThymosConfig, natsUrl: string, logger: Logger, cleanup: CleanupStack): Promise<void> {
  const seed = fleetNatsSeed(config, 'system', natsUrl);
  const system = seed ? await connectWithin(natsUrl, NATS_CONNECT_MS, { seed }, 'system').catch(() => undefined) : undefined;
  if (!system) {
    logger.warn(
      { identity: 'system' },
      'refused connections are not logged: the system identity has no key, or the server did not admit it (thymos up makes it)',
    );
    return;
  }
  cleanup.push(() => closeNats(system));
  logRefusedConnections(system, logger);
}

/** A NATS connection within `ms`, or NATS_UNAVAILABLE; a connection that comes late is closed. */
async function connectWithin(
  natsUrl: string,
  ms: number,
  link: NatsLink,
  who: 'supervisor' | 'system' = 'supervisor',
): Promise<NatsConnection> {
  const pending = connectNats({
    servers: natsUrl,
    name: who === 'system' ? 'thymos-supervisor-system' : 'thymos-supervisor',
    ...link,
    who,
  });
  return withDeadline(pending, ms, () => {
    void pending.then((late) => late.close()).catch(() => undefined);
    throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `NATS at ${natsUrl} did not accept a connection within ${ms} ms`);
  });
}

/** The fleet's relevance evaluator; an agent asked for its own score that does not answer in time gives none. */
async function relevanceEvaluator(
  config: ThymosConfig,
  domain: DomainSchema,
  link: AgentLink,
  work: WorkScores | undefined,
): Promise<RelevanceEvaluator> {
  const timeout = config.supervisor.evaluate_timeout_ms;
  return new RelevanceEvaluator({
    domain,
    work: work && ((id) => work.score(id)),
    defaultScore: config.lifecycle.default_score,
    module: config.relevancePath ? await RelevanceEvaluator.loadModule(config.relevancePath) : undefined,
    askAgent: async (id, input) => {
      try {
        return (await link.control(id, { op: 'evaluate', input }, timeout)).score ?? undefined;
      } catch {
        return undefined; // no answer in time: the next source decides
      }
    },
  });
}

async function closeNats(nc: NatsConnection): Promise<void> {
  await nc.drain().catch(() => nc.close());
}

/**
 * The fleet's concept service (unless `[memory] concepts` is off; an agent that finds none
 * extracts on its own) and its embedding service, when `[embedding]` is enabled and its model
 * loads (without it agents recall with BM25 only).
 */
async function serveTextModels(
  config: ThymosConfig,
  nc: NatsConnection,
  names: FleetNames,
  logger: Logger,
  cleanup: CleanupStack,
): Promise<TextModels> {
  const served: TextModels = {};
  if (config.memory.concepts) {
    const tagger = new CompromiseExtractor();
    const concepts = new ConceptService(tagger);
    concepts.serve(nc, logger, names);
    // The tagger's first use loads its lexicon (~0.5 s of CPU): now, rather than under the first events.
    void tagger.extract(['Mira met Bram at the mill.']).catch(() => undefined);
    cleanup.push(() => concepts.stop());
    served.concepts = concepts;
  }
  if (!config.embedding.enabled) return served;
  try {
    const embedding = await EmbeddingService.load(config);
    embedding.serve(nc, logger, names);
    cleanup.push(() => embedding.stop());
    logger.info({ model: embedding.model, dims: embedding.dims }, 'embedding service ready');
    served.embedding = embedding;
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'no embedding service: agents recall with BM25 only');
  }
  return served;
}

/** What the router sends with each event's copies: its concepts and vector from the services the supervisor runs. */
function eventHints({ concepts, embedding }: TextModels): EventRouterOptions['hints'] {
  if (!concepts && !embedding) return undefined;
  return async (text) => {
    const [found, vectors] = await Promise.all([
      concepts?.extract([text]).catch(() => undefined),
      embedding?.embed([text]).catch(() => undefined),
    ]);
    const values = vectors?.[0];
    return { concepts: found?.[0], vector: values && embedding ? { model: embedding.model, values } : undefined };
  };
}

/** The calls waiting for approval: decisions go to running agents over their control subject; past their deadline, calls are refused. */
async function openApprovals(
  db: Surreal,
  link: AgentLink,
  config: ThymosConfig,
  logger: Logger,
  cleanup: CleanupStack,
): Promise<ApprovalBook> {
  const deliver = (agent: string, call_id: string, decision: ApprovalDecision) =>
    link.control(agent, { op: 'decide_call', call_id, decision }, config.supervisor.request_timeout_ms);
  const approvals = await ApprovalBook.open(
    db,
    deliver,
    { approvalTimeoutS: config.tools.approval_timeout_s, maxPending: config.tools.max_pending },
    logger,
  );
  approvals.startSweeping();
  cleanup.push(() => approvals.stop());
  return approvals;
}

/** The supervisor's control API on `<fleet>.supervisor.<op>`: each op handed to the controller, control actions audited. */
function supervisorControlApi(
  nc: NatsConnection,
  names: FleetNames,
  {
    controller,
    approvals,
    endpoints,
    jobs,
  }: { controller: FleetController; approvals: ApprovalBook; endpoints: AgentEndpoints; jobs: JobQueues },
  audit: AuditLog,
  supervisor: () => FleetStatus['supervisor'],
  logger: Logger,
): ControlApi<typeof SupervisorRequestSchemas, typeof SupervisorResultSchemas> {
  return new ControlApi(
    nc,
    {
      schemas: SupervisorRequestSchemas,
      results: SupervisorResultSchemas,
      subject: (op) => names.supervisor(op),
      // An agent's own calls come on its own subjects, so who asks is known, not claimed.
      agents: {
        subject: (id, op) => names.agentSupervisor(id, op),
        ops: new Set(['ping', 'call_pending', 'agent_endpoint', 'job_give_up']),
        only: new Set(['call_pending', 'agent_endpoint', 'job_give_up']),
      },
      // Decisions only on the approver's subjects: an identity apart from whoever calls agents' tools (the client, the agents).
      approver: {
        subject: (op) => names.approver(op),
        ops: new Set(['ping', 'approvals', 'approve', 'refuse']),
        only: new Set(['approve', 'refuse']),
      },
      contextOp: 'reconcile',
      audit: {
        log: audit,
        ops: new Set([
          'reconcile',
          'start',
          'stop',
          'archive',
          'restore',
          'stop_all',
          'approve',
          'refuse',
          'agent_endpoint',
          'jobs_requeue',
        ]),
        only: { agent_endpoint: (r) => (r as { wake?: boolean }).wake === true },
        details: { agent_endpoint: (r) => ({ tool: (r as { tool?: unknown }).tool }) },
      },
      handlers: {
        reconcile: (r, progress) =>
          controller.reconcile(r.context, {
            dryRun: r.dry_run,
            strict: r.strict,
            returnAfterWakes: r.return_after_wakes,
            onProgress: progress,
          }),
        ping: async () => ({ pid: process.pid, started_at: supervisor().started_at }),
        status: async () => ({ supervisor: supervisor(), ...(await controller.status()) }),
        start: (r, progress) => controller.operate('start', r.id, { mode: r.mode, onProgress: progress, settled: true }),
        stop: (r, progress) => controller.operate('stop', r.id, { onProgress: progress, settled: true }),
        archive: (r, progress) => controller.operate('archive', r.id, { onProgress: progress, settled: true }),
        restore: (r, progress) => controller.operate('restore', r.id, { onProgress: progress, settled: true }),
        // The fleet going down: the work relevance wakes no worker once they are stopped.
        stop_all: async (_r, progress) => {
          await jobs.work?.stop();
          return controller.stopAll({ onProgress: progress });
        },
        history: (r) => controller.history(r.id, r.limit),
        call_pending: async (r, _progress, by) => ({ decision: await approvals.submit(ownCall(r.call, by)) }),
        approvals: async (r) => approvals.pending(r.id),
        approve: (r, _progress, by) => approvals.decide(r.id, r.call_id, true, by, r.reason, r.done),
        refuse: (r, _progress, by) => approvals.decide(r.id, r.call_id, false, by, r.reason),
        agent_endpoint: (r, progress, by) => endpoints.resolve({ ...r, from: by.agent! }, progress),
        jobs: (r) => jobs.backlog(r.queue),
        jobs_dead: (r) => jobs.dead(r.limit, r.queue),
        jobs_requeue: (r) => jobs.requeue(r.seq),
        job_give_up: (r, _progress, by) => jobs.giveUp(by.agent!, r),
      },
    },
    logger,
  );
}

/** A call an agent submits for approval: its own only (`agent` is the one whose subject it came on). */
function ownCall<C extends { agent: string }>(call: C, by: Requester): C {
  if (call.agent !== by.agent)
    throw new ThymosError(ErrorCode.UNAUTHORIZED, `call.agent: ${by.who} may submit its own calls for approval, not ${call.agent}'s`, {
      location: { path: 'call.agent' },
    });
  return call;
}

/** Finishes the reconcile a killed predecessor left unfinished, and records it in the audit log as this supervisor's. */
async function finishInterrupted(controller: FleetController, audit: AuditLog): Promise<void> {
  const resumed = await controller.resumeInterrupted();
  if (!resumed) return;
  const { report } = resumed;
  await audit.record({
    at: new Date().toISOString(),
    op: 'reconcile',
    by: `supervisor#${process.pid} (finishing the reconcile begun ${resumed.since})`,
    result: 'ok',
    duration_ms: report.duration_ms,
    details: auditDetails(report),
  });
}
