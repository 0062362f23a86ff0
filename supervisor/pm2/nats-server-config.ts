import { join } from 'node:path';

import type { FleetPaths } from '../../shared/config/fleet-paths.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { listNatsIdentities } from '../../shared/nats/nats-identity.js';
import { writeAtomic } from '../../shared/platform/write-atomic.js';

/** The managed nats-server's configuration: `run/nats.conf`, mode 0600. */
export function natsServerConfigFile(paths: FleetPaths): string {
  return join(paths.run, 'nats.conf');
}

/**
 * Writes the managed nats-server's configuration: loopback on `port`, JetStream in the fleet's
 * `nats/` folder, and one user per identity under `data/secrets/nats/` (its public key only: the
 * seeds never leave their files). A connection that is none of them is refused. Written again,
 * then reloaded, whenever the fleet gains or loses an identity.
 */
export function writeNatsServerConfig(paths: FleetPaths, port: number, skipped?: (file: string, reason: string) => void): string {
  const users = listNatsIdentities(paths.data, skipped).map((i) => `    { nkey: ${JSON.stringify(i.publicKey)} } # ${i.who}`);
  const text = [
    `listen: ${JSON.stringify(`127.0.0.1:${port}`)}`,
    'server_name: "thymos"',
    'jetstream {',
    `  store_dir: ${JSON.stringify(paths.nats)}`,
    '}',
    'authorization {',
    '  users: [',
    ...users,
    '  ]',
    '}',
    '',
  ].join('\n');
  const file = natsServerConfigFile(paths);
  writeAtomic(file, text, 0o600);
  return file;
}

/**
 * Writes the server's users again and has the server at `pid` reload them (SIGHUP); a pid that
 * is gone or not ours is NATS_UNAVAILABLE.
 */
export function reloadNatsUsers(paths: FleetPaths, port: number, pid: number, skipped?: (file: string, reason: string) => void): void {
  writeNatsServerConfig(paths, port, skipped);
  try {
    process.kill(pid, 'SIGHUP');
  } catch (err) {
    throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `the managed nats-server (pid ${pid}) could not be told to reload its users: ${(err as Error).message}`);
  }
}
