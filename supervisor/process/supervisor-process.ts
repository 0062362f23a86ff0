import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Surreal } from 'surrealdb';

import { type FleetPaths, fleetPaths, Pm2Names, readFleetInfo, type ThymosConfig, unreadableByDomain } from '../../shared/config/index.js';
import { type DomainSchema, EMPTY_DOMAIN, loadDomainSchema } from '../../shared/domain/index.js';
import { createLogger } from '../../shared/engines/index.js';
import { toThymosError } from '../../shared/errors/index.js';
import { domainWork, ensureEventStream, fleetNatsLink } from '../../shared/nats/index.js';
import { CleanupStack, type Logger, StopOnce, writeAtomic } from '../../shared/platform/index.js';
import { type ApprovalDecision, FleetNames, type FleetStatus, ReconcileContextSchema } from '../../shared/protocol/index.js';
import { AgentEndpoints } from '../api/agent-endpoints.js';
import { ApprovalBook } from '../api/approval-book.js';
import { auditDetails, AuditLog } from '../api/audit-log.js';
import { EventRouter, type EventRouterOptions } from '../events/event-router.js';
import { AgentLink } from '../lifecycle/agent-link.js';
import { AgentPool, type AgentPoolOptions } from '../lifecycle/agent-pool.js';
import { AgentRegistry } from '../lifecycle/agent-registry.js';
import { SupervisorMetrics } from '../metrics/supervisor-metrics.js';
import { type FleetKeys, fleetKeySecret, keysInCluster } from '../nats-server/fleet-keys.js';
import { NatsAccess } from '../nats-server/nats-access.js';
import { type AgentOwnership } from '../ownership/agent-ownership.js';
import { LocalOwnership } from '../ownership/local-ownership.js';
import { ProcessManager } from '../pm2/process-manager.js';
import { thymosBinPath } from '../pm2/thymos-bin.js';
import { ClusterJournal } from '../reconcile/cluster-journal.js';
import { type FleetController } from '../reconcile/fleet-controller.js';
import type { Journal } from '../reconcile/reconcile-journal.js';
import { RelevanceEvaluator } from '../relevance/relevance-evaluator.js';
import { type WorkScores } from '../relevance/work-scores.js';
import { worldControlApi } from '../world/world-api.js';
import { openWorldDatabase } from '../world/world-database.js';
import { WorldStore } from '../world/world-store.js';
import { openAgentKeys } from './agent-keys.js';
import { assembleFleet } from './fleet-assembly.js';
import { openLease, watchLease } from './fleet-lease.js';
import { type JobQueues, openJobQueues } from './job-queues.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { closeNats, connectWithin, NATS_CONNECT_MS, refuseSecondSupervisor, watchRefusals } from './nats-links.js';
import { supervisorControlApi } from './supervisor-control-api.js';
import { eventHints, serveTextModels } from './text-models.js';

export interface SupervisorOptions {
  config: ThymosConfig;
  /** The NATS server to use; `thymos up` passes the one it runs. */
  natsUrl: string;
  /** Aborted while it stands by for the coordinator role, the supervisor does not start (CANCELLED). */
  signal?: AbortSignal;
}

export interface RunningSupervisor {
  controller: FleetController;
  metricsUrl: string;
  stop(reason: string): Promise<void>;
  readonly stopped: Promise<void>;
}

/** What every phase of the supervisor's start shares. */
interface Base {
  config: ThymosConfig;
  natsUrl: string;
  paths: FleetPaths;
  names: FleetNames;
  logger: Logger;
  cleanup: CleanupStack;
}

/**
 * Runs the supervisor of one fleet until told to stop: claims the fleet's agents, opens the
 * registry, connects to NATS and pm2, adopts the agents still running, then serves the
 * control API and `/metrics`. Stopping it leaves agents running (`thymos down` stops them first).
 */
export async function runSupervisorProcess(options: SupervisorOptions): Promise<RunningSupervisor> {
  const { config, natsUrl } = options;
  const logger = createLogger({ level: config.log.level, bindings: { component: 'supervisor', host: config.host.name } });
  const base: Base = {
    config,
    natsUrl,
    paths: fleetPaths(config.dataPath),
    names: new FleetNames(config.fleet.name),
    logger,
    cleanup: new CleanupStack(),
  };
  try {
    // The fleet's secret is read once, and leaves the environment the agents and spares are started with.
    const secret = keysInCluster(config) ? fleetKeySecret(config) : undefined;
    if (secret) delete process.env[config.cluster.key_env];
    const local = await openFleetState(config, base.paths, base.cleanup);
    const nc = await connectFleetNats(base);
    const keys = secret && (await openAgentKeys({ ...base, nc, domain: local.domain, secret }));
    // Placement by lease: claims go to the fleet's KV bucket; the data lock taken above still keeps this data directory to one supervisor.
    const metrics = new SupervisorMetrics(config.host.name);
    // Standing by, it tells pm2 it is ready: `thymos up` returns, and it takes over once the coordinator's lease ends.
    const standingBy = () => process.send?.('ready');
    const signal = options.signal ?? new AbortController().signal;
    const lease = config.cluster.enabled
      ? await openLease({ ...base, nc, registry: local.registry, domain: local.domain, metrics, standingBy, signal })
      : undefined;
    const state = lease ? { ...local, ownership: lease.ownership } : local;
    // Under a lease, the reconcile journal is the fleet's, in the placement bucket: the host that takes the role over finishes it.
    const journal =
      lease &&
      (await ClusterJournal.open({ nc, names: base.names, host: config.host.name, token: () => lease.ownership.coordinating, logger }));
    const fleet = await startFleet(base, { ...state, keys, journal }, nc, metrics);
    const serving = await serve(base, state, nc, fleet, lease?.keeper);
    let stopper: StopOnce | undefined;
    let stepDownAsked = false;
    const stepDown = () => void (stopper ? stopper.stop('the coordinator role was lost') : (stepDownAsked = true));
    if (lease)
      await watchLease({ ...lease, ...fleet, audit: serving.audit, registry: state.registry, cleanup: base.cleanup, stepDown, logger });
    stopper = new StopOnce(async (reason) => {
      logger.info({ reason }, 'supervisor stopping');
      for (const api of serving.apis) api.stop();
      await fleet.controller.idle();
      await base.cleanup.run();
      logger.info('supervisor stopped');
    });
    const { controller } = fleet;
    logger.info(
      { agents: controller.ids.length, nats: natsUrl, metrics: serving.metricsUrl, counts: controller.counts() },
      'supervisor ready',
    );
    process.send?.('ready');
    // A reconcile this supervisor's previous run was killed in the middle of is finished now,
    // behind the same queue as requests, so a status asked meanwhile sees the end of it.
    void finishInterrupted(controller, serving.audit);
    const stopping = stopper;
    if (stepDownAsked) void stopping.stop('the coordinator role was lost');
    return { controller, metricsUrl: serving.metricsUrl, stop: (reason: string) => stopping.stop(reason), stopped: stopping.stopped };
  } catch (err) {
    await base.cleanup.run();
    logger.flush();
    throw toThymosError(err);
  }
}

/** The supervisor's NATS connection; on a server `thymos up` runs, its refused connections are logged too. */
async function connectFleetNats({ config, natsUrl, names, logger, cleanup }: Base): Promise<NatsConnection> {
  const nc = await connectWithin(natsUrl, NATS_CONNECT_MS, fleetNatsLink(config, 'supervisor', natsUrl));
  cleanup.push(() => closeNats(nc));
  // Under placement by lease, hosts' supervisors run at once, and the coordinator role keeps the fleet's services to one.
  if (!config.cluster.enabled) await refuseSecondSupervisor(nc, names, natsUrl, config.host.name);
  if (readFleetInfo(config)?.managed_nats) await watchRefusals(config, natsUrl, logger, cleanup);
  return nc;
}

/** The running fleet: its controller with the agents adopted, the work queues, the world store and the pool. */
interface StartedFleet {
  controller: FleetController;
  processes: ProcessManager;
  link: AgentLink;
  metrics: SupervisorMetrics;
  jobs: JobQueues;
  world: WorldStore;
  pool: AgentPool | undefined;
}

/** Streams, queues, relevance, the world store and the pool; then the controller adopts the agents and routing starts. */
async function startFleet(
  base: Base,
  { db, registry, domain, ownership, keys, journal }: FleetState & { keys: FleetKeys | undefined; journal: Journal | undefined },
  nc: NatsConnection,
  metrics: SupervisorMetrics,
): Promise<StartedFleet> {
  const { config, natsUrl, paths, names, logger, cleanup } = base;
  const hints = eventHints(await serveTextModels(config, nc, names, logger, cleanup));
  const processes = await ProcessManager.connect(paths.pm2Home);
  cleanup.push(() => processes.disconnect());
  const link = new AgentLink(nc, names);
  const jsm = await openEventStream(base, nc);
  const jobs = await openJobQueues(jsm, nc, domain, names, config, logger, cleanup, (id) => registry.get(id));
  const evaluator = await relevanceEvaluator(config, domain, link, jobs.work);
  const world = await WorldStore.open({
    db,
    tables: domain.worldTables,
    nc,
    names,
    leaseMs: config.world.lease_ms,
    maxSubscriptions: config.world.max_subscriptions,
    maxSubscriptionsPerOwner: config.world.max_subscriptions_per_owner,
    logger,
  });
  cleanup.push(() => world.close());
  let controller: FleetController | undefined;
  const thymosBin = thymosBinPath();
  const pool = await openPool(
    { config, paths, processes, logger, natsUrl, thymosBin, wakesDone: async () => controller?.wakesDone() },
    cleanup,
  );
  // Every agent of the domain gets its NATS identity; one that left the domain loses its own.
  const access = new NatsAccess({ config, paths, processes, natsUrl, logger, users: { names, work: domainWork(domain) }, keys });
  await access.sync(Object.keys(domain.agents));
  const onStopped = (id: string) => {
    access.release(id);
    return world.endOwner(id);
  };
  const started = assembleFleet({
    ...{ config, domain, paths, registry, processes, nc, names, link, natsUrl, evaluator, metrics, logger, thymosBin },
    ...{ ownership, jsm, pool, access, onStopped, journal },
  });
  controller = started;
  await started.adopt();
  started.watchHeartbeats();
  jobs.work?.start((only) => started.reconcile(ReconcileContextSchema.parse({}), { only }));
  cleanup.push(() => jobs.work?.stop());
  if (jsm)
    await startRouter(
      { nc, names, domain, settings: config.events, registry, evaluator, hints, onRouted: (ids) => metrics.countRouted(ids), logger },
      cleanup,
    );
  return { controller: started, processes, link, metrics, jobs, world, pool };
}

/**
 * The fleet's event stream; without JetStream the supervisor runs on, with world events off.
 * Streams asked to be kept on several nodes (`[cluster] replicas`) that cannot be are no such
 * case: the supervisor stops, rather than run without the copies it was told to keep.
 */
async function openEventStream({ config, names, logger }: Base, nc: NatsConnection): Promise<JetStreamManager | undefined> {
  return await ensureEventStream(nc, config.events, names, config.cluster.replicas).catch((err: unknown) => {
    if (config.cluster.replicas > 1) throw err;
    logger.warn({ err: (err as Error).message }, 'world events are off: the NATS server has no JetStream');
    return undefined;
  });
}

/** `/metrics`, the control API and the world API served; `run/supervisor.json` says where. */
async function serve(
  { config, natsUrl, paths, names, logger, cleanup }: Base,
  { db, registry, domain }: FleetState,
  nc: NatsConnection,
  { controller, processes, link, metrics, jobs, world, pool }: StartedFleet,
  lease: LeaseKeeper | undefined,
): Promise<{ apis: Array<{ start(): void; stop(): void }>; audit: AuditLog; metricsUrl: string }> {
  const metricsUrl = await metrics.listen('127.0.0.1', config.supervisor.metrics_port);
  cleanup.push(() => metrics.close());
  const self: FleetStatus['supervisor'] = {
    pid: process.pid,
    host: config.host.name,
    started_at: new Date().toISOString(),
    metrics_url: metricsUrl,
    nats_url: natsUrl,
  };
  const audit = new AuditLog(paths.audit, logger, config.host.name);
  const endpoints = new AgentEndpoints({
    domain,
    config,
    natsUrl,
    livePid: async (id) => (await processes.describe(Pm2Names.agent(id)))?.pid ?? null,
    entry: (id) => registry.get(id),
    stopping: (id) => controller.stopping(id),
    wake: (id, onProgress) => controller.operate('start', id, { mode: 'active', onProgress }),
  });
  const approvals = await openApprovals(db, link, config, logger, cleanup);
  const apis = [
    supervisorControlApi(
      nc,
      names,
      { controller, approvals, endpoints, jobs },
      audit,
      () => ({ ...self, pool: pool?.stats() ?? null, lease: lease?.status() ?? null }),
      logger,
      lease && ((id) => lease.placement(id)),
    ),
    worldControlApi(nc, world, logger, names, lease?.claims),
  ];
  for (const api of apis) {
    api.start();
    cleanup.push(() => api.stop());
  }
  await nc.flush();
  mkdirSync(paths.run, { recursive: true });
  writeAtomic(join(paths.run, 'supervisor.json'), JSON.stringify(self, null, 2));
  return { apis, audit, metricsUrl };
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

/** The fleet's state: who owns its agents, its database and registry, and its domain. */
interface FleetState {
  db: Surreal;
  registry: AgentRegistry;
  domain: DomainSchema;
  ownership: AgentOwnership;
}

/**
 * Takes ownership of the fleet's agents (on one host, the fleet's data lock) and opens its database
 * and registry while the domain schema (a Pkl child process) loads.
 */
async function openFleetState(config: ThymosConfig, paths: FleetPaths, cleanup: CleanupStack): Promise<FleetState> {
  const ownership = LocalOwnership.open(paths.data);
  cleanup.push(() => ownership.close());
  const domainPromise = config.domainSchemaPath
    ? loadDomainSchema(config.domainSchemaPath, { exclude: unreadableByDomain(config) })
    : Promise.resolve(EMPTY_DOMAIN);
  domainPromise.catch(() => undefined);
  const db = await openWorldDatabase(config, paths.world);
  cleanup.push(() => db.close());
  const registry = await AgentRegistry.open(db);
  cleanup.push(() => registry.close());
  return { db, registry, domain: await domainPromise, ownership };
}

/** The warm pool when `[supervisor] pool_size` asks for one; spares are started only while no reconcile runs. */
async function openPool(options: AgentPoolOptions, cleanup: CleanupStack): Promise<AgentPool | undefined> {
  if (options.config.supervisor.pool_size === 0) return undefined;
  const pool = await AgentPool.open(options);
  cleanup.push(() => pool.close());
  return pool;
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
