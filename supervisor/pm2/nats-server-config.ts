import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { FleetPaths } from '../../shared/config/fleet-paths.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { listNatsIdentities } from '../../shared/nats/nats-identity.js';
import { natsPermissions, type NatsWork } from '../../shared/nats/nats-permissions.js';
import { writeAtomic } from '../../shared/platform/write-atomic.js';
import type { FleetNames } from '../../shared/protocol/fleet-names.js';

/** What the server's users may do: the fleet's subjects, and the work each agent takes from the queues. */
export interface NatsUsers {
  names: FleetNames;
  work: NatsWork;
}

/** The managed nats-server's configuration: `run/nats.conf`, mode 0600. */
export function natsServerConfigFile(paths: FleetPaths): string {
  return join(paths.run, 'nats.conf');
}

/**
 * Writes the managed nats-server's configuration: loopback on `port`, JetStream in the fleet's
 * `nats/` folder, and one user per identity under `data/secrets/nats/` (its public key only: the
 * seeds never leave their files) with what it may publish and subscribe to (`natsPermissions`).
 * A connection that is none of them is refused. Written again, then reloaded, whenever the fleet
 * gains or loses an identity or an agent's work changes. Whether the text changed.
 */
export function writeNatsServerConfig(paths: FleetPaths, port: number, users: NatsUsers, skipped?: (file: string, reason: string) => void): { file: string; changed: boolean } {
  const lines = listNatsIdentities(paths.data, skipped).map((i) => {
    const permissions = natsPermissions(users.names, i.who, users.work);
    return `    { nkey: ${JSON.stringify(i.publicKey)}${permissions ? `, permissions: ${JSON.stringify(permissions)}` : ''} } # ${i.who}`;
  });
  const text = [
    `listen: ${JSON.stringify(`127.0.0.1:${port}`)}`,
    'server_name: "thymos"',
    'jetstream {',
    `  store_dir: ${JSON.stringify(paths.nats)}`,
    '}',
    'authorization {',
    '  users: [',
    ...lines,
    '  ]',
    '}',
    '',
  ].join('\n');
  const file = natsServerConfigFile(paths);
  let before: string | undefined;
  try {
    before = readFileSync(file, 'utf8');
  } catch {
    before = undefined;
  }
  if (before !== text) writeAtomic(file, text, 0o600);
  return { file, changed: before !== text };
}

/**
 * Writes the server's users again and has the server at `pid` reload them (SIGHUP); a pid that
 * is gone or not ours is NATS_UNAVAILABLE.
 */
export function reloadNatsUsers(paths: FleetPaths, port: number, pid: number, users: NatsUsers, skipped?: (file: string, reason: string) => void): void {
  writeNatsServerConfig(paths, port, users, skipped);
  try {
    process.kill(pid, 'SIGHUP');
  } catch (err) {
    throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `the managed nats-server (pid ${pid}) could not be told to reload its users: ${(err as Error).message}`);
  }
}
