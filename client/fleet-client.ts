import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { fleetNatsUrl, loadConfig, natsLinkPrivate, type ThymosConfig } from '../shared/config/index.js';
import { AgentIdSchema } from '../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../shared/errors/index.js';
import {
  type NatsConnection,
  publishAttempts,
  publishJob,
  type PublishOptions,
  publishWorldEvent,
  REQUESTER,
  REQUESTER_HEADER,
  SupervisorRequester,
  WorldClient,
} from '../shared/nats/index.js';
import { agentTokenPath, readAgentToken } from '../shared/platform/index.js';
import {
  type AgentAccess,
  type AgentMode,
  type EventDecision,
  EventDecisionSchema,
  FleetNames,
  type FleetStatus,
  type ListedDeadLetter,
  parseJob,
  parseJsonOrUndefined,
  parseReconcileContext,
  parseWorldEvent,
  type PendingCall,
  type ProgressMessage,
  type ReconcileContextInput,
  type ReconcileReport,
  type SkillBacklog,
  type SupervisorResultSchemas,
  type TransitionRecord,
  type WorldEventInput,
} from '../shared/protocol/index.js';
import { type TalkAnswer, type TalkOptions, talkTo } from './agent-talk.js';
import { connectFleetNats } from './connect-fleet-nats.js';
import { allPendingCalls } from './pending-calls.js';

/** An MCP client connected to one running agent (the SDK's own `Client`): `callTool`, `readResource`, `listTools`… */
export type AgentClient = Client;

export interface ConnectOptions {
  /** How long to wait for NATS before failing with FLEET_NOT_RUNNING. @default 3000 */
  connectTimeoutMs?: number;
}

export interface OperationOptions {
  /** Called as each agent's transition finishes. */
  onProgress?: (p: ProgressMessage) => void;
}

/**
 * A running fleet, seen from a game loop or a script. Every call goes to the fleet's
 * supervisor over NATS; `agent(id)` gives an MCP client for one agent. The caller never
 * touches pm2 or SurrealDB.
 */
export interface Fleet {
  /**
   * Scores every agent from `context` and reconciles the fleet; invalid context → INVALID_CONTEXT. Properties nothing reads come back as `warnings` (INVALID_CONTEXT with `strict`).
   * It returns once every move is done, unless `returnAfterWakes`: then it returns as soon as the agents it wakes or upgrades are ready, with the agents still going to sleep in `pending`;
   * the next reconcile waits for them, and its report's `settled` says how they ended (a failed stop is there).
   */
  reconcile(
    context: ReconcileContextInput,
    options?: OperationOptions & { dryRun?: boolean; strict?: boolean; returnAfterWakes?: boolean },
  ): Promise<ReconcileReport>;
  status(): Promise<FleetStatus>;
  start(id: string, options?: OperationOptions & { mode?: AgentMode }): Promise<ReconcileReport>;
  stop(id: string, options?: OperationOptions): Promise<ReconcileReport>;
  archive(id: string, options?: OperationOptions): Promise<ReconcileReport>;
  restore(id: string, options?: OperationOptions): Promise<ReconcileReport>;
  /**
   * Publishes a world event into the fleet's JetStream stream; agents whose event filters
   * match hear it (Dormant ones when they wake). Invalid input → INVALID_INPUT naming the field.
   */
  publish(event: WorldEventInput): Promise<{ id: string; seq: number; duplicate: boolean }>;
  /**
   * The shared world store: `get`, `set`, `patch`, `delete`, `query` the tables the domain
   * declares (`worldTables`), and `subscribe` to live changes. Writes are recorded as by `app`;
   * subscriptions end with `close()`.
   */
  readonly world: WorldClient;
  /** The newest transitions of one agent, newest first. */
  history(id: string, limit?: number): Promise<TransitionRecord[]>;
  /**
   * Calls `onDecision` with what agents that reason about events (`reason_on_events`) decided,
   * as they decide; one agent's when `agent` is given. A decision that names another agent than
   * the one whose subject it came on is dropped. Stops with `close()`.
   */
  decisions(onDecision: (decision: EventDecision) => void, options?: { agent?: string }): { close(): void };
  /**
   * An MCP client connected to a running agent (cached until `close()`). Fails with
   * AGENT_NOT_ACTIVE when the agent is Dormant or Archived.
   */
  agent(id: string): Promise<AgentClient>;
  /**
   * Says `message` to a running agent and returns its reply; with `onText`, the reply's text
   * arrives piece by piece as its model writes it, before the answer. Abort `signal` to stop the
   * reply (CANCELLED). AGENT_NOT_ACTIVE when the agent is not active.
   */
  talk(id: string, message: string, options?: TalkOptions): Promise<TalkAnswer>;
  /**
   * The tool calls that wait for a person's approval (tools of permission `confirm`), oldest
   * first; one agent's when `id` is given. Deciding them is not the client's: the approver
   * decides (`approver(config)`, `thymos approve`), with a key of its own. A call a crash cut
   * off while it ran (`interrupted_at`) is listed again: did it take effect? Each call is listed
   * whole (its arguments are at most 64 KiB), read from the supervisor a page at a time, so any
   * number of them is listed.
   */
  approvals(id?: string): Promise<PendingCall[]>;
  /** The fleet's work queues: publish jobs, and see what waits for which skill. */
  readonly jobs: Jobs;
  /** A running agent's MCP address (what `thymos url ID` prints: the address its host advertises), port and pid; AGENT_NOT_ACTIVE if it does not run. */
  agentUrl(id: string): Promise<{ url: string; port: number; pid: number | null }>;
  /**
   * The `Authorization` header value a running agent's MCP endpoint asks for (`Bearer <token>`),
   * from the supervisor over NATS, on any host; null when `[mcp] require_token` is off.
   */
  agentAuthorization(id: string): Promise<string | null>;
  close(): Promise<void>;
}

/** A fleet's work queues, as a job loop uses them. */
export interface Jobs {
  /**
   * Publishes a job for `skill` on `queue` (`<fleet>.jobs.<queue>.<skill>`); an agent with the
   * skill takes it. `id` (made up when left out) deduplicates: the same id published again
   * within an hour is the same job (`duplicate`). INVALID_INPUT names a bad field; a queue the
   * fleet does not have is NOT_FOUND.
   */
  publish(
    queue: string,
    skill: string,
    payload: unknown,
    options?: { id?: string },
  ): Promise<{ id: string; seq: number; duplicate: boolean }>;
  /** Each skill's backlog on each queue (one queue's with `queue`): waiting, in progress, the oldest job's age, whether an agent serves it. */
  list(queue?: string): Promise<SkillBacklog[]>;
  /** The newest dead letters (of one queue with `queue`), newest first: each job given up on, why, after how many deliveries, by whom. */
  dead(options?: { queue?: string; limit?: number }): Promise<ListedDeadLetter[]>;
  /** Puts a dead letter's job back on its queue under the same job id, and removes the letter (audited). NOT_FOUND when there is no such letter. */
  requeue(seq: number): Promise<{ id: string; queue: string; skill: string; seq: number }>;
}

/**
 * Connects to the fleet that `thymos up` started for a configuration.
 *
 * @example
 * const fleet = await connect('examples/village/thymos.toml');
 * const report = await fleet.reconcile({ global: { player_location: 'forge' } });
 * const bram = await fleet.agent('bram_smith');
 * const answer = await bram.callTool({ name: 'talk_to_bram_smith', arguments: { message: 'Hello', speaker: 'player' } });
 * await fleet.close();
 */
export async function connect(config: ThymosConfig | string, options: ConnectOptions = {}): Promise<Fleet> {
  const cfg = typeof config === 'string' ? loadConfig(config) : config;
  return new FleetClient(await connectFleetNats(cfg, 'client', options.connectTimeoutMs ?? 3000), cfg);
}

const QUICK_MS = 10_000;

class FleetClient implements Fleet {
  readonly #nc: NatsConnection;
  readonly #names: FleetNames;
  readonly #requester: SupervisorRequester<typeof SupervisorResultSchemas>;
  /** Whose MCP tokens may be read from this host's data folder, and whether its NATS link is private. */
  readonly #config: ThymosConfig;
  readonly #natsUrl: string;
  /** Events and jobs are tried again, under their ids, while the streams of a cluster elect leaders. */
  readonly #publishing: PublishOptions;
  readonly #agents = new Map<string, { client: Client; port: number; pid: number | null }>();
  readonly world: WorldClient;
  readonly jobs: Jobs;

  constructor(nc: NatsConnection, config: ThymosConfig) {
    this.#nc = nc;
    this.#names = new FleetNames(config.fleet.name);
    this.#config = config;
    this.#natsUrl = fleetNatsUrl(config);
    this.#publishing = { attempts: publishAttempts(config.cluster.replicas) };
    this.#requester = SupervisorRequester.control(nc, config.supervisor.request_timeout_ms, this.#names);
    this.world = new WorldClient(nc, { timeoutMs: QUICK_MS, by: 'app', owner: WorldClient.appOwner(), names: this.#names });
    this.jobs = {
      publish: async (queue, skill, payload, options = {}) => {
        const job = parseJob({ queue, skill, payload, ...(options.id !== undefined ? { id: options.id } : {}) });
        return { id: job.id, ...(await publishJob(nc, job, this.#names, this.#publishing)) };
      },
      list: (queue) => this.#requester.request('jobs', queue === undefined ? {} : { queue }, { timeoutMs: QUICK_MS }),
      dead: (options = {}) =>
        this.#requester.request(
          'jobs_dead',
          {
            ...(options.queue !== undefined ? { queue: options.queue } : {}),
            ...(options.limit !== undefined ? { limit: options.limit } : {}),
          },
          { timeoutMs: QUICK_MS },
        ),
      requeue: (seq) => this.#requester.request('jobs_requeue', { seq }),
    };
  }

  async reconcile(
    context: ReconcileContextInput,
    options: OperationOptions & { dryRun?: boolean; strict?: boolean; returnAfterWakes?: boolean } = {},
  ): Promise<ReconcileReport> {
    const valid = parseReconcileContext(context);
    return this.#requester.request(
      'reconcile',
      // Sent only when asked for, so a supervisor from before the option still takes every other reconcile.
      {
        context: valid,
        dry_run: options.dryRun ?? false,
        strict: options.strict ?? false,
        ...(options.returnAfterWakes ? { return_after_wakes: true } : {}),
      },
      { onProgress: options.onProgress, watch: true },
    );
  }

  status(): Promise<FleetStatus> {
    // Quick by nature: a short deadline keeps a caller from waiting out a supervisor that just died.
    return this.#requester.request('status', {}, { timeoutMs: QUICK_MS });
  }

  start(id: string, options: OperationOptions & { mode?: AgentMode } = {}): Promise<ReconcileReport> {
    return this.#requester.request(
      'start',
      { id, ...(options.mode ? { mode: options.mode } : {}) },
      { onProgress: options.onProgress, watch: true },
    );
  }

  stop(id: string, options: OperationOptions = {}): Promise<ReconcileReport> {
    return this.#requester.request('stop', { id }, { onProgress: options.onProgress, watch: true });
  }

  archive(id: string, options: OperationOptions = {}): Promise<ReconcileReport> {
    return this.#requester.request('archive', { id }, { onProgress: options.onProgress, watch: true });
  }

  restore(id: string, options: OperationOptions = {}): Promise<ReconcileReport> {
    return this.#requester.request('restore', { id }, { onProgress: options.onProgress, watch: true });
  }

  async publish(input: WorldEventInput): Promise<{ id: string; seq: number; duplicate: boolean }> {
    const event = parseWorldEvent(input);
    return { id: event.id, ...(await publishWorldEvent(this.#nc, event, this.#names, undefined, this.#publishing)) };
  }

  approvals(id?: string): Promise<PendingCall[]> {
    return allPendingCalls((after) =>
      this.#requester.request('approvals', { ...(id === undefined ? {} : { id }), ...(after ? { after } : {}) }, { timeoutMs: QUICK_MS }),
    );
  }

  history(id: string, limit = 50): Promise<TransitionRecord[]> {
    return this.#requester.request('history', { id, limit }, { timeoutMs: QUICK_MS });
  }

  decisions(onDecision: (decision: EventDecision) => void, options: { agent?: string } = {}): { close(): void } {
    const subject =
      options.agent === undefined ? this.#names.allAgentDecisions : this.#names.agentDecision(AgentIdSchema.parse(options.agent));
    const sub = this.#nc.subscribe(subject, {
      callback: (err, msg) => {
        // An agent publishes its decisions with no reply: one with a reply was sent some other way (a JetStream delivery aimed here).
        if (err || msg.reply) return;
        const parsed = EventDecisionSchema.safeParse(parseJsonOrUndefined(msg.string()));
        // Only an agent may publish on its own subject, but what it writes is its own: a decision
        // naming another agent than the subject's is dropped, never passed on as that agent's.
        if (parsed.success && msg.subject === this.#names.agentDecision(parsed.data.agent)) onDecision(parsed.data);
      },
    });
    return { close: () => sub.unsubscribe() };
  }

  /**
   * The address of a running agent's MCP endpoint, as its host advertises it, with its pid;
   * AGENT_NOT_ACTIVE if it does not run.
   */
  async agentUrl(id: string): Promise<{ url: string; port: number; pid: number | null }> {
    const { url, port, pid } = await this.#access(id);
    return { url, port, pid };
  }

  async agentAuthorization(id: string): Promise<string | null> {
    const access = await this.#access(id);
    if (access.token !== null) return `Bearer ${access.token}`;
    if (!this.#config.mcp.require_token) return null;
    throw new ThymosError(
      ErrorCode.UNAUTHORIZED,
      `${id}'s MCP token is not handed over a NATS link that is neither loopback nor TLS, and ${agentTokenPath(this.#config.dataPath, id)} is not on this host: set [nats] tls_*, or ask on the agent's host`,
    );
  }

  /**
   * Where a running agent is, from the supervisor (`agent_access`), and its token: handed over when
   * both this client's NATS link and the supervisor's are loopback or TLS, else read from the
   * agent's folder when that is on this host.
   */
  async #access(id: string): Promise<AgentAccess> {
    const wantToken = natsLinkPrivate(this.#natsUrl, this.#config.natsTls !== undefined);
    const access = await this.#requester.request('agent_access', { id, token: wantToken }, { timeoutMs: QUICK_MS });
    if (access.token !== null || !this.#config.mcp.require_token) return access;
    return { ...access, token: readAgentToken(this.#config.dataPath, id) ?? null };
  }

  async agent(id: string): Promise<Client> {
    const row = await this.#access(id);
    const cached = this.#agents.get(id);
    // A restarted process (new pid) has none of the old sessions: connect afresh.
    if (cached && cached.port === row.port && cached.pid === row.pid) return cached.client;
    if (cached) await cached.client.close().catch(() => undefined);
    // The MCP client side (and its JSON Schema validator) loads with the first agent asked for:
    // a loop that only reconciles and publishes never pays for it at import.
    const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ]);
    const client = new Client({ name: 'thymos-fleet', version: '0.1.0' });
    const token = row.token;
    // Its calls are recorded as made by this process (`Thymos-By`), which then cannot approve them.
    const headers: Record<string, string> = { [REQUESTER_HEADER]: REQUESTER, ...(token ? { authorization: `Bearer ${token}` } : {}) };
    await client.connect(new StreamableHTTPClientTransport(new URL(row.url), { requestInit: { headers } }));
    this.#agents.set(id, { client, port: row.port, pid: row.pid });
    return client;
  }

  async talk(id: string, message: string, options: TalkOptions = {}): Promise<TalkAnswer> {
    return talkTo(await this.agent(id), id, message, options);
  }

  async close(): Promise<void> {
    await this.world.close();
    for (const { client } of this.#agents.values()) await client.close().catch(() => undefined);
    this.#agents.clear();
    await this.#nc.close();
  }
}
