import type { NatsConnection } from '@nats-io/transport-node';

import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { agentIdentity, connectNats, logRefusals, type NatsLink, serveCoded } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  type AgentControlReply,
  type AgentControlRequest,
  AgentControlRequestSchema,
  type AgentStatusMessage,
  type ApprovalDecision,
  type FleetNames,
  parseJsonOrUndefined,
  type ToolCallRecord,
} from '../../shared/protocol/index.js';
import type { Controllable } from '../runtime/runtime-ports.js';
import type { LeaseFence } from './lease-fence.js';

export interface AgentControlChannelOptions {
  servers: string;
  /** What the agent connects with (`fleetNatsLink`): its own identity's key or credentials, and TLS files, when the server asks for them. */
  link: NatsLink;
  /** The fleet's subjects. */
  names: FleetNames;
  heartbeatMs: number;
  /** Called for a `shutdown` request, after the reply is sent. */
  onShutdown: () => void;
  /** Applies a person's decision on a pending tool call (`decide_call`); unset, the agent has no tools to decide on. */
  decideCall?: (callId: string, decision: ApprovalDecision) => Promise<ToolCallRecord>;
  /** Its tool calls so far, by tool and status, for the supervisor's metrics. */
  toolCalls?: () => NonNullable<AgentStatusMessage['tool_calls']>;
  /** The fencing token it was started under, named in each status notice. */
  token?: number | undefined;
  /** Its lease's fence (placement by lease): guards every message in and out, and takes the supervisor's extensions. */
  fence?: LeaseFence | undefined;
}

/**
 * The agent's NATS side: request/reply on `<fleet>.agent.<id>.control` and heartbeats
 * on `<fleet>.agent.<id>.status`. NATS being down never stops the agent: the link is
 * made in the background, kept up by the client's reconnects, and reported in state.
 */
export class AgentControlChannel {
  readonly #runtime: Controllable;
  readonly #options: AgentControlChannelOptions;
  readonly #logger: Logger;
  #nc: NatsConnection | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #connected: Promise<void>;

  constructor(runtime: Controllable, options: AgentControlChannelOptions, logger: Logger) {
    this.#runtime = runtime;
    this.#options = options;
    this.#logger = logger;
    runtime.setNatsLink('disconnected');
    this.#connected = this.#connect();
    runtime.on('decision', (decision) => {
      const nc = this.#nc;
      if (!nc || nc.isClosed()) return;
      try {
        nc.publish(this.#options.names.agentDecision(runtime.id), JSON.stringify(decision));
      } catch (err) {
        this.#logger.warn({ err }, 'decision not published');
      }
    });
  }

  /** Resolves when subscribed, or after `ms`, whichever is first; true if subscribed. */
  async waitUntilConnected(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([this.#connected.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The NATS connection, once the first connection is made. */
  async connection(): Promise<NatsConnection> {
    await this.#connected;
    return this.#nc!;
  }

  /** Publishes a status notice now (ready, mode, stopping…), if connected. */
  publishStatus(kind: AgentStatusMessage['kind']): void {
    const nc = this.#nc;
    if (!nc || nc.isClosed()) return;
    const calls = this.#options.toolCalls?.() ?? [];
    const msg: AgentStatusMessage = {
      kind,
      ts: new Date().toISOString(),
      state: this.#runtime.getState(),
      rss_bytes: process.memoryUsage.rss(),
      ...(this.#options.token === undefined ? {} : { token: this.#options.token }),
      ...(calls.length ? { tool_calls: calls } : {}),
    };
    try {
      nc.publish(this.#options.names.agentStatus(this.#runtime.id), JSON.stringify(msg));
    } catch (err) {
      this.#logger.debug({ err }, 'status not published');
    }
  }

  /** Sends what is buffered and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    const nc = this.#nc;
    if (!nc || nc.isClosed()) return;
    try {
      await nc.drain();
    } catch {
      await nc.close().catch(() => undefined);
    }
  }

  async #connect(): Promise<void> {
    const nc = await connectNats({
      servers: this.#options.servers,
      name: `thymos-agent-${this.#runtime.id}`,
      ...this.#options.link,
      who: agentIdentity(this.#runtime.id),
    });
    if (this.#closed) {
      await nc.close();
      return;
    }
    this.#nc = nc;
    const fence = this.#options.fence;
    if (fence) {
      fence.guard(nc);
      const subject = this.#options.names.agentLease(this.#runtime.id);
      nc.subscribe(subject, {
        callback: (err, msg) => {
          // Only what a supervisor published there: a JetStream delivery aimed here by someone's pull keeps its own subject and an ack reply.
          if (!err && msg.subject === subject && !msg.reply) fence.extend(parseJsonOrUndefined(msg.string()));
        },
      });
    }
    logRefusals(nc, this.#logger, agentIdentity(this.#runtime.id));
    serveCoded(
      nc,
      {
        subject: this.#options.names.agentControl(this.#runtime.id),
        schema: AgentControlRequestSchema,
        invalid: (error, raw) =>
          new ThymosError(
            ErrorCode.INVALID_INPUT,
            `control message: ${describeIssues(error, raw)}; expected {"op":"get_state"|"set_mode"|"snapshot"|"shutdown"|"evaluate"|"decide_call"}`,
          ),
        handle: (req) => this.#handle(req),
      },
      this.#logger,
    );
    await nc.flush();
    this.#runtime.setNatsLink('connected');
    this.#logger.info({ servers: this.#options.servers }, 'nats connected');
    this.#heartbeat = setInterval(() => this.publishStatus('heartbeat'), this.#options.heartbeatMs);
    this.#heartbeat.unref();
    void this.#watch(nc);
  }

  async #watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        this.#runtime.setNatsLink('disconnected');
        this.#logger.warn('nats disconnected; reconnecting in the background');
      } else if (s.type === 'reconnect') {
        this.#runtime.setNatsLink('connected');
        this.#logger.info('nats reconnected');
      }
    }
  }

  /** Answers one valid control request with the fields of its `{ ok: true, … }` reply. */
  async #handle(req: AgentControlRequest): Promise<Omit<Extract<AgentControlReply, { ok: true }>, 'ok'>> {
    switch (req.op) {
      case 'get_state': {
        const fence = this.#options.fence;
        return { state: this.#runtime.getState(), lease: fence ? { token: fence.token, fence_at: fence.fenceAt } : null };
      }
      case 'set_mode': {
        const state = this.#runtime.setMode(req.mode);
        this.publishStatus('mode');
        return { state };
      }
      case 'snapshot': {
        const at = await this.#runtime.snapshot('control');
        return { state: this.#runtime.getState(), snapshot_at: at };
      }
      case 'evaluate':
        return { state: this.#runtime.getState(), score: (await this.#runtime.evaluateRelevance(req.input)) ?? null };
      case 'shutdown':
        // After the reply has gone out: the shutdown drains this connection.
        setImmediate(this.#options.onShutdown);
        return { state: this.#runtime.getState() };
      case 'decide_call': {
        if (!this.#options.decideCall)
          throw new ThymosError(
            ErrorCode.NOT_FOUND,
            `${this.#runtime.id} has no declared tools, so no call ${JSON.stringify(req.call_id)}`,
          );
        return { state: this.#runtime.getState(), call: await this.#options.decideCall(req.call_id, req.decision) };
      }
    }
  }
}
