import { fleetNatsUrl, readFleetInfo, type ThymosConfig } from '../shared/config/index.js';
import { ErrorCode, ThymosError } from '../shared/errors/index.js';
import { connectNats, fleetNatsLink, type NatsConnection, natsIdentityFile, readNatsSeed } from '../shared/nats/index.js';
import { refusesConnections, withDeadline } from '../shared/platform/index.js';
/** The identities a program outside the fleet connects as: the client (`connect`) or the approver (`approver`). */
export type FleetUser = 'client' | 'approver';

/**
 * Connects to the NATS of the fleet that `thymos up` started for `config`, as `who`, within
 * `timeoutMs`: FLEET_NOT_RUNNING when the fleet's own server is down or nothing answers in time;
 * NATS_UNAVAILABLE when the fleet's server asks for an identity and this one has no key here
 * (`thymos up` makes those that are missing).
 */
export async function connectFleetNats(config: ThymosConfig, who: FleetUser, timeoutMs: number): Promise<NatsConnection> {
  const url = fleetNatsUrl(config);
  const managed = config.nats.url ? undefined : readFleetInfo(config);
  // The fleet's own nats-server: when nothing listens on its port the fleet is down, and waiting tells nothing more.
  if (managed?.managed_nats && managed.nats_port && (await refusesConnections('127.0.0.1', managed.nats_port))) {
    throw new ThymosError(
      ErrorCode.FLEET_NOT_RUNNING,
      `the fleet is not running: nothing listens on 127.0.0.1:${managed.nats_port}, its NATS port (data/run/fleet.json); start it with thymos up`,
    );
  }
  const link = fleetNatsLink(config, who, url);
  // Without its key, the connection would be refused over and over until the deadline, and read as a fleet that is down.
  if (
    config.natsCredentialsPath === undefined &&
    (managed?.managed_nats || config.nats.identities) &&
    !readNatsSeed(config.dataPath, who)
  ) {
    const fix = managed?.managed_nats
      ? 'thymos up makes the keys that are missing (and has the running nats-server admit them)'
      : 'run thymos nats-config, then reload that server';
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `the fleet has no NATS key for ${who} (${natsIdentityFile(config.dataPath, who)}): ${fix}`,
    );
  }
  const pending = connectNats({ servers: url, name: `thymos-${who}`, ...link, who });
  const nc = await withDeadline(pending, timeoutMs, () => undefined);
  if (!nc) {
    void pending.then((late) => late.close()).catch(() => undefined);
    throw new ThymosError(
      ErrorCode.FLEET_NOT_RUNNING,
      `cannot reach the fleet's NATS at ${url} within ${timeoutMs} ms: is the fleet up (thymos up)?`,
    );
  }
  return nc;
}
