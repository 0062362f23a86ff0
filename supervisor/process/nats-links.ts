import type { NatsConnection } from '@nats-io/transport-node';

import type { ThymosConfig } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { connectNats, fleetNatsSeed, type NatsLink, SupervisorRequester } from '../../shared/nats/index.js';
import { type CleanupStack, type Logger, withDeadline } from '../../shared/platform/index.js';
import type { FleetNames } from '../../shared/protocol/index.js';
import { logRefusedConnections } from './refused-connections.js';

export const NATS_CONNECT_MS = 15_000;

/**
 * The managed server's refused connections, read in its system account as the `system` identity
 * and logged (`logRefusedConnections`). Without that identity, or a connection within the
 * deadline, the supervisor runs on and says so: the server refuses strangers all the same.
 */
export async function watchRefusals(config: ThymosConfig, natsUrl: string, logger: Logger, cleanup: CleanupStack): Promise<void> {
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
export async function connectWithin(
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

/** Drains a NATS connection, or closes it when draining fails. */
export async function closeNats(nc: NatsConnection): Promise<void> {
  await nc.drain().catch(() => nc.close());
}

/** How long a supervisor that starts waits for another of its fleet to answer. */
const OTHER_SUPERVISOR_MS = 3000;

/**
 * SUPERVISOR_ALREADY_RUNNING when another supervisor of this fleet answers on its NATS, from
 * whichever host or data directory: one fleet has one supervisor. A supervisor that died answers
 * nothing, so a restart after a crash goes on.
 */
export function refuseSecondSupervisor(nc: NatsConnection, names: FleetNames, natsUrl: string, host: string): Promise<void> {
  return SupervisorRequester.refuseSecond(nc, OTHER_SUPERVISOR_MS, names, natsUrl, host);
}
