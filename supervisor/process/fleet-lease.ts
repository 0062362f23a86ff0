import { setTimeout as sleep } from 'node:timers/promises';

import type { NatsConnection } from '@nats-io/transport-node';

import type { ThymosConfig } from '../../shared/config/index.js';
import type { DomainSchema } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import type { CleanupStack, Logger } from '../../shared/platform/index.js';
import type { FleetNames } from '../../shared/protocol/index.js';
import type { AuditLog } from '../api/audit-log.js';
import type { AgentRegistry } from '../lifecycle/agent-registry.js';
import { RUNNING } from '../lifecycle/agent-states.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';
import { ClusterOwnership } from '../ownership/cluster-ownership.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import type { FleetController } from '../reconcile/fleet-controller.js';
import { LeaseKeeper } from './lease-keeper.js';

/**
 * This host's lease in the fleet's placement bucket (`[cluster] enabled`), renewed from now on, with
 * its agents' leases extended after each renewal. Refused (SUPERVISOR_ALREADY_RUNNING) while a live
 * supervisor holds this `[host] name`'s lease. Settles once this host holds the fleet's coordinator
 * role: until then it stands by (`standingBy`), its lease renewed, claiming nothing.
 */
export async function openLease(o: {
  config: ThymosConfig;
  names: FleetNames;
  logger: Logger;
  cleanup: CleanupStack;
  nc: NatsConnection;
  registry: AgentRegistry;
  domain: DomainSchema;
  metrics: SupervisorMetrics;
  /** Called once if another host holds the coordinator role as this one starts: it stands by. */
  standingBy: (coordinator: string) => void;
  /** Aborted, a supervisor standing by stops waiting (CANCELLED). */
  signal: AbortSignal;
}): Promise<{ ownership: ClusterOwnership; keeper: LeaseKeeper }> {
  const { config, names, logger, cleanup, nc } = o;
  const ownership = await ClusterOwnership.open({
    nc,
    names,
    host: config.host.name,
    leaseMs: config.cluster.lease_ms,
    fenceMarginMs: config.cluster.fence_margin_ms,
    replicas: config.cluster.replicas,
    dataDir: config.dataPath,
  });
  cleanup.push(() => ownership.close());
  const view = await ownership.view(logger);
  const keeper = new LeaseKeeper({ ownership, view, config, nc, names, registry: o.registry, logger, metrics: o.metrics });
  cleanup.push(() => keeper.stop());
  await takeCoordinatorRole(ownership, o);
  // Claimed at once, not when the fleet is adopted: agents this host's earlier run left running are
  // extended under the new claims before their fence, however long the rest of the start takes.
  for (const id of Object.keys(o.domain.agents))
    await ownership
      .claim(id)
      .catch((err: unknown) => logger.warn({ agent: id, err: toThymosError(err).message }, 'agent not claimed at start'));
  keeper.extendNow();
  logger.info({ lease_ms: config.cluster.lease_ms, renew_ms: config.cluster.renew_ms }, 'lease taken: placement by lease');
  return { ownership, keeper };
}

/**
 * Where the lease's losses go once the fleet runs: a lost lease stops the agents held and is
 * audited; an agent that stopped itself at its fence (pm2's exit 5) is recorded Dormant and, while
 * its claim is held, started again under it.
 */
export async function watchLease(o: {
  keeper: LeaseKeeper;
  ownership: ClusterOwnership;
  controller: FleetController;
  processes: ProcessManager;
  registry: AgentRegistry;
  audit: AuditLog;
  cleanup: CleanupStack;
  /** The coordinator role is another host's now: this supervisor stops (pm2 starts it again, standing by). */
  stepDown: () => void;
  logger: Logger;
}): Promise<void> {
  const { keeper, controller, registry } = o;
  keeper.attach({
    audit: o.audit,
    // The role went with the lease: taken again under the next run when no other host took it meanwhile, else given up.
    roleLost: async () => {
      try {
        await o.ownership.coordinate();
        o.logger.warn('the coordinator role, lost with the lease, was taken again: no other host had taken it');
      } catch (err) {
        o.logger.error(
          { err: toThymosError(err).message },
          'the coordinator role is lost: this supervisor stops, and stands by when started again',
        );
        // Its agents have stopped, or passed their fence with the lease: their placements are given up, so the new coordinator takes them at once.
        await o.ownership
          .resign()
          .catch((resignErr: unknown) =>
            o.logger.warn({ err: toThymosError(resignErr).message }, 'placements not given up: they end with the lease'),
          );
        o.stepDown();
      }
    },
    stopAgents: (ids) => controller.abandon(ids, 'the lease of this host was lost: another host may hold the agent now'),
    fenced: async (id) => {
      const before = registry.get(id);
      if (!before || !RUNNING(before.state)) return;
      await controller.abandon([id], 'it stopped itself at its fence: its lease was not extended in time');
      if (o.ownership.holds(id) !== undefined) await controller.operate('start', id, { mode: before.mode ?? 'active' });
    },
  });
  o.cleanup.push(await o.processes.watchExits((exit) => keeper.agentExited(exit.name, exit.exitCode)));
}

/**
 * Takes the fleet's coordinator role, waiting while another host whose lease is live holds it: this
 * host stands by (its lease renewed by the keeper) and takes over once that lease has ended, which
 * the server's clock judges at each try, every `renew_ms`.
 */
async function takeCoordinatorRole(
  ownership: ClusterOwnership,
  o: { config: ThymosConfig; logger: Logger; standingBy: (coordinator: string) => void; signal: AbortSignal },
): Promise<void> {
  let standing: string | undefined;
  for (;;) {
    try {
      await ownership.coordinate();
      if (standing) o.logger.info({ was: standing }, "coordinator role taken: the coordinator's lease ended");
      return;
    } catch (err) {
      const e = toThymosError(err);
      const holder = (e.details as { host?: string } | undefined)?.host;
      if (e.code !== ErrorCode.NOT_OWNER || !holder) o.logger.warn({ err: e.message }, 'taking the coordinator role failed; trying again');
      else if (!standing) {
        standing = holder;
        o.logger.info({ coordinator: holder }, 'standing by: another host coordinates the fleet; this one takes over once its lease ends');
        o.standingBy(holder);
      }
    }
    await sleep(o.config.cluster.renew_ms, undefined, { signal: o.signal }).catch(() => undefined);
    if (o.signal.aborted) throw new ThymosError(ErrorCode.CANCELLED, 'stopped while standing by');
  }
}
