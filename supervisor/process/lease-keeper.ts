import type { NatsConnection } from '@nats-io/transport-node';

import { Pm2Names, type ThymosConfig } from '../../shared/config/index.js';
import { ErrorCode, ExitCode, toThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { FleetNames, LeaseExtension } from '../../shared/protocol/index.js';
import type { AuditLog } from '../api/audit-log.js';
import type { AgentRegistry } from '../lifecycle/agent-registry.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';
import type { ClusterOwnership } from '../ownership/cluster-ownership.js';
import type { HostRow, PlacementView } from '../ownership/placement-view.js';

export interface LeaseKeeperOptions {
  ownership: ClusterOwnership;
  /** The placement bucket as status shows it. */
  view: PlacementView;
  metrics: SupervisorMetrics;
  config: ThymosConfig;
  nc: NatsConnection;
  names: FleetNames;
  registry: AgentRegistry;
  logger: Logger;
}

/** What a lost lease is told to, once the fleet runs: the audit log, and what stops the agents named (they stop themselves too, at their fence). */
export interface LeaseLossHandlers {
  audit: AuditLog;
  stopAgents: (ids: string[]) => Promise<void>;
  /** Records agent `id` Dormant after it stopped itself at its fence and, while its claim is held, starts it again under it. */
  fenced: (id: string) => Promise<void>;
  /** The lost lease held the coordinator role too. */
  roleLost: () => Promise<void>;
}

/** This host's lease as status shows it. */
export interface LeaseStatus {
  /** `held`, or `lost` since a renewal failed until the lease is taken again. */
  state: 'held' | 'lost';
  lease_ms: number;
  /** When the lease last renewed ends (ISO time, this host's clock). */
  deadline: string;
  /** When it was last lost, and why; null if never. */
  lost: { at: string; reason: string } | null;
  /** Every host of the placement bucket, as its watch last saw it. */
  hosts: HostRow[];
  /** The host that holds the coordinator role, with its token; null while none does. */
  coordinator: { host: string; token: number } | null;
}

/**
 * Keeps this host's lease (placement by lease): renews it every `[cluster] renew_ms` and, after each
 * renewal, extends the lease of every running agent it holds (`<fleet>.agent.<id>.lease`, with the
 * token it was started under), so each agent stops itself `fence_margin_ms` before the lease could
 * end unless renewed again. When a renewal finds the lease lost (another host ended it, or it was
 * sent too late), the agents it held are stopped, and the loss is logged and audited; the next
 * renewal takes the lease again under a new run, and a reconcile claims the agents anew.
 *
 * Safe to repeat: an extension sent twice moves nothing further; stopping an agent already stopped
 * does nothing.
 */
export class LeaseKeeper {
  readonly #o: LeaseKeeperOptions;
  readonly #stop: () => void;
  #lost: LeaseStatus['lost'] = null;
  #handlers: LeaseLossHandlers | undefined;
  /** The coordinator role was lost with the lease before the handlers were attached (the fleet still starting). */
  #roleLostEarly = false;

  constructor(options: LeaseKeeperOptions) {
    this.#o = options;
    this.#stop = options.ownership.renewEvery(options.config.cluster.renew_ms, {
      renewed: (ms) => {
        options.metrics.leaseRenewSeconds.observe(ms / 1000);
        this.#extend();
      },
      failed: (err) => void this.#failed(err),
    });
    this.#extend();
  }

  /**
   * Where a lost lease is audited and its agents stopped from now on (before, it is logged only: no
   * agent was started yet). A coordinator role lost with a lease before is dealt with now.
   */
  attach(handlers: LeaseLossHandlers): void {
    this.#handlers = handlers;
    if (this.#roleLostEarly) void handlers.roleLost();
  }

  /**
   * An agent that exited with code 5 stopped itself at its fence (a renewal that did not reach it in
   * time, a pause of its own, a pm2 restart after its start context's fence): pm2 leaves it stopped,
   * and it is recorded Dormant and, while its claim is held, started again under that claim.
   */
  agentExited(name: string, exitCode: number | null): void {
    if (exitCode !== ExitCode.FENCED || !name.startsWith(Pm2Names.agent(''))) return;
    const id = name.slice(Pm2Names.agent('').length);
    const handlers = this.#handlers;
    if (!handlers || !this.#o.registry.get(id)) return;
    this.#o.logger.warn({ agent: id }, 'agent stopped itself at its fence');
    void handlers
      .fenced(id)
      .catch((err: unknown) =>
        this.#o.logger.error(
          { agent: id, err: toThymosError(err).message },
          'an agent that stopped itself at its fence was not started again',
        ),
      );
  }

  status(): LeaseStatus {
    const { ownership, config } = this.#o;
    return {
      state: ownership.lost ? 'lost' : 'held',
      lease_ms: config.cluster.lease_ms,
      deadline: new Date(ownership.deadline).toISOString(),
      lost: this.#lost,
      hosts: this.#o.view.hosts(),
      coordinator: this.#o.view.coordinator(),
    };
  }

  /** The claims the world store checks an agent's writes against: the one held on each agent, and the one it took over on this host. */
  readonly claims = {
    current: (id: string) => ({ token: this.#o.ownership.holds(id), previous: this.#o.ownership.succeeded(id) }),
  };

  /** Which host holds agent `id`, under which token, as the bucket's watch last saw it. */
  placement(id: string): { host: string; token: number } | undefined {
    return this.#o.view.placement(id);
  }

  stop(): void {
    this.#stop();
    this.#o.view.close();
  }

  /**
   * Extends the lease of every agent held, running or not: one starting (its fence was given with its
   * start context) or left running by this host's earlier supervisor run is extended too, and a
   * message to an agent that does not run is dropped by NATS.
   */
  #extend(): void {
    const { ownership, nc, names, config } = this.#o;
    const fenceAt = ownership.deadline - config.cluster.fence_margin_ms;
    for (const [id, token] of ownership.held()) {
      const previous = ownership.succeeded(id);
      const extension: LeaseExtension = { token, fence_at: fenceAt, ...(previous === undefined ? {} : { previous }) };
      nc.publish(names.agentLease(id), JSON.stringify(extension));
    }
  }

  /** Extends every held agent's lease now, without waiting for the next renewal (after claims made at start). */
  extendNow(): void {
    if (!this.#o.ownership.lost) this.#extend();
  }

  async #failed(err: unknown): Promise<void> {
    const { logger, config } = this.#o;
    const e = toThymosError(err);
    if (e.code !== ErrorCode.NOT_OWNER) {
      logger.warn({ err: e.message }, 'lease renewal failed; trying again');
      return;
    }
    const details = e.details as { agents?: string[]; coordinator?: boolean } | undefined;
    const agents = (details?.agents ?? []).filter((id) => this.#o.registry.get(id));
    this.#lost = { at: new Date().toISOString(), reason: e.message };
    this.#o.metrics.leaseLosses.inc();
    logger.error({ agents, err: e.message }, 'lease lost: stopping the agents it held');
    const handlers = this.#handlers;
    if (!handlers) {
      this.#roleLostEarly ||= details?.coordinator === true;
      return;
    }
    void handlers.audit.record({
      at: this.#lost.at,
      op: 'lease_lost',
      by: 'supervisor',
      via: `supervisor#${process.pid}@${config.host.name}`,
      result: e.code,
      duration_ms: 0,
      details: { agents, reason: e.message },
    });
    await handlers
      .stopAgents(agents)
      .catch((stopErr: unknown) =>
        logger.error(
          { err: toThymosError(stopErr).message },
          'stopping the agents of a lost lease failed: they stop themselves at their fence',
        ),
      );
    if (details?.coordinator) await handlers.roleLost();
  }
}
