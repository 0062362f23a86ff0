import { loadConfig, type ThymosConfig } from '../shared/config/index.js';
import { type NatsConnection, SupervisorRequester } from '../shared/nats/index.js';
import { type CallDecisionReport, FleetNames, type PendingCall, type SupervisorResultSchemas } from '../shared/protocol/index.js';
import { connectFleetNats } from './connect-fleet-nats.js';
import type { ConnectOptions } from './fleet-client.js';
import { allPendingCalls } from './pending-calls.js';

/**
 * Whoever decides the tool calls that wait for a person (tools of permission `confirm`), as the
 * fleet's `approver` identity: a NATS key of its own (`data/secrets/nats/approver.nk`), apart
 * from the client's that `connect()` and agents' tool callers use, so a process holding only the
 * client's key cannot approve a call it made. Each decision is audited as `by: approver`, with
 * this process (`Thymos-By`) as `via`.
 */
export interface Approver {
  /** The calls that wait for a decision, oldest first, each whole; one agent's when `id` is given (read a page at a time, as `Fleet.approvals`). */
  approvals(id?: string): Promise<PendingCall[]>;
  /**
   * Approves a pending call: the agent runs it now if it is awake, else when it wakes. A call
   * this same process made (through `connect().agent(id)`) is refused (TOOL_DENIED); one decided
   * already is INVALID_INPUT. A call a crash interrupted runs again; with `done: true` it is
   * recorded as having taken effect (`ok`, `marked_done`) and not run again (INVALID_INPUT for a
   * call that has not run).
   */
  approve(id: string, callId: string, options: { reason: string; done?: boolean }): Promise<CallDecisionReport>;
  /** Refuses a pending call: it never runs, and its caller finds it refused. Audited like `approve`. */
  refuse(id: string, callId: string, options: { reason: string }): Promise<CallDecisionReport>;
  close(): Promise<void>;
}

/**
 * Connects to the fleet that `thymos up` started for a configuration as its approver. A game
 * loop that only calls tools needs none; give this key only to what decides (a person's console,
 * a policy process), not to what calls the tools. NATS_UNAVAILABLE when the fleet asks for keys
 * and has no approver's (`thymos up` makes it; `thymos nats-config` for a server you run;
 * `approver.creds` with `[nats] credentials`).
 *
 * @example
 * const desk = await approver('examples/support/thymos.toml');
 * for (const call of await desk.approvals()) await desk.approve(call.agent, call.call_id, { reason: 'within the limit' });
 * await desk.close();
 */
export async function approver(config: ThymosConfig | string, options: ConnectOptions = {}): Promise<Approver> {
  const cfg = typeof config === 'string' ? loadConfig(config) : config;
  return new FleetApprover(await connectFleetNats(cfg, 'approver', options.connectTimeoutMs ?? 3000), cfg);
}

const QUICK_MS = 10_000;

class FleetApprover implements Approver {
  readonly #nc: NatsConnection;
  readonly #requester: SupervisorRequester<typeof SupervisorResultSchemas>;

  constructor(nc: NatsConnection, config: ThymosConfig) {
    this.#nc = nc;
    this.#requester = SupervisorRequester.approver(nc, config.supervisor.request_timeout_ms, new FleetNames(config.fleet.name));
  }

  approvals(id?: string): Promise<PendingCall[]> {
    return allPendingCalls((after) =>
      this.#requester.request('approvals', { ...(id === undefined ? {} : { id }), ...(after ? { after } : {}) }, { timeoutMs: QUICK_MS }),
    );
  }

  approve(id: string, callId: string, options: { reason: string; done?: boolean }): Promise<CallDecisionReport> {
    return this.#requester.request('approve', {
      id,
      call_id: callId,
      reason: options.reason,
      ...(options.done === true ? { done: true } : {}),
    });
  }

  refuse(id: string, callId: string, options: { reason: string }): Promise<CallDecisionReport> {
    return this.#requester.request('refuse', { id, call_id: callId, reason: options.reason });
  }

  async close(): Promise<void> {
    await this.#nc.close();
  }
}
