import { setTimeout as sleep } from 'node:timers/promises';

import type { ThymosConfig } from '../../shared/config/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import { connectNats, fleetNatsLink, type NatsConnection, SupervisorRequester } from '../../shared/nats/index.js';
import { withDeadline } from '../../shared/platform/index.js';
import { FleetNames, type FleetStatus, type ProgressMessage, type ReconcileReport } from '../../shared/protocol/index.js';

/** What `thymos up` and `thymos down` ask the fleet's supervisor, and what they make of its answer. */

/** A client connection for one command, or undefined when the server does not take it within `ms`. */
async function commandConnection(config: ThymosConfig, natsUrl: string, name: string, ms: number): Promise<NatsConnection | undefined> {
  const pending = connectNats({ servers: natsUrl, name, ...fleetNatsLink(config, 'client', natsUrl), who: 'client' });
  return await withDeadline(pending, ms, () => {
    void pending.then((late) => late.close()).catch(() => undefined);
    return undefined;
  });
}

/**
 * SUPERVISOR_ALREADY_RUNNING, before anything starts, when a supervisor of this fleet already
 * answers on `natsUrl`. Under placement by lease (`[cluster] enabled`) several hosts' supervisors
 * run at once, one of them holding the coordinator role: a second is no such case.
 */
export async function refuseOtherSupervisor(config: ThymosConfig, natsUrl: string): Promise<void> {
  if (config.cluster.enabled) return;
  const nc = await connectNats({ servers: natsUrl, name: 'thymos-up', ...fleetNatsLink(config, 'client', natsUrl), who: 'client' });
  try {
    await SupervisorRequester.refuseSecond(nc, 2000, new FleetNames(config.fleet.name), natsUrl, config.host.name);
  } finally {
    await nc.close();
  }
}

/**
 * Waits until the supervisor just started answers, and returns the fleet's status as answered.
 * Under placement by lease, the answer may come from another host's supervisor, the coordinator:
 * it counts once that supervisor's status names this host's lease, taken by the supervisor started
 * here (`pid`), which then stands by.
 */
export async function waitForSupervisor(
  config: ThymosConfig,
  natsUrl: string,
  o: { pid: () => Promise<number | undefined>; ms: number; log: string; signal: AbortSignal },
): Promise<FleetStatus> {
  const deadline = Date.now() + o.ms;
  const nc = await commandConnection(config, natsUrl, 'thymos-up', o.ms);
  if (!nc) throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `cannot connect to ${natsUrl} within ${o.ms} ms`);
  try {
    const requester = SupervisorRequester.control(nc, 2000, new FleetNames(config.fleet.name));
    for (;;) {
      let why: string;
      try {
        const status = await requester.request('status');
        if (status.supervisor.host === config.host.name) return status;
        const pid = await o.pid();
        if (status.supervisor.lease?.hosts.some((h) => h.host === config.host.name && h.pid === pid && !h.expired_by)) return status;
        why = `host ${status.supervisor.host} answers for the fleet, and does not list this host's lease yet`;
      } catch (err) {
        why = toThymosError(err).message;
      }
      o.signal.throwIfAborted();
      if (Date.now() > deadline)
        throw new ThymosError(ErrorCode.STARTUP_TIMEOUT, `the supervisor did not answer within ${o.ms} ms: ${why} (log: ${o.log})`);
      await sleep(200);
    }
  } finally {
    await nc.close();
  }
}

/**
 * `thymos down`'s first step: asks the supervisor to snapshot and stop every agent it holds. Under
 * placement by lease, only this host's: when another host's supervisor coordinates the fleet (this
 * one stands by), its agents are left running. Undefined when nothing was asked or the supervisor
 * could not do it (the caller then stops the agents through pm2).
 */
export async function stopAgentsThroughSupervisor(
  config: ThymosConfig,
  natsUrl: string,
  step: (line: string) => void,
  onProgress: ((p: ProgressMessage) => void) | undefined,
): Promise<ReconcileReport | undefined> {
  const nc = await commandConnection(config, natsUrl, 'thymos-down', 3000);
  if (!nc) return undefined;
  try {
    const names = new FleetNames(config.fleet.name);
    if (config.cluster.enabled) {
      const status = await SupervisorRequester.control(nc, config.supervisor.request_timeout_ms, names).request('status');
      if (status.supervisor.host !== config.host.name) {
        step(`host ${status.supervisor.host} coordinates the fleet: its agents keep running; this host's supervisor stands down`);
        return undefined;
      }
    }
    step('stopping agents (snapshot, then stop)');
    // Under placement by lease, only this host's supervisor may take it: another coordinating meanwhile refuses.
    return await SupervisorRequester.control(nc, config.supervisor.request_timeout_ms, names).request(
      'stop_all',
      config.cluster.enabled ? { host: config.host.name } : {},
      { onProgress, watch: true },
    );
  } catch (err) {
    step(`the supervisor could not stop the agents (${toThymosError(err).message}); stopping them through pm2`);
    return undefined;
  } finally {
    await nc.close();
  }
}
