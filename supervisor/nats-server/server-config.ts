import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import type { FleetPaths } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { listNatsIdentities, type NatsIdentity, natsInboxPrefix, natsPermissions, type NatsWork } from '../../shared/nats/index.js';
import { writeAtomic } from '../../shared/platform/index.js';
import type { FleetNames } from '../../shared/protocol/index.js';

/** What the server's users may do: the fleet's subjects, and the work each agent takes from the queues. */
export interface NatsUsers {
  names: FleetNames;
  work: NatsWork;
}

/** The managed nats-server's configuration: `run/nats.conf`, mode 0600. */
export function natsServerConfigFile(paths: FleetPaths): string {
  return join(paths.run, 'nats.conf');
}

/** The account of the managed server that holds the fleet's users and its JetStream. */
const FLEET_ACCOUNT = 'THYMOS';
/** The managed server's system account: the supervisor's `system` identity reads its advisories there. */
const SYSTEM_ACCOUNT = 'SYS';
/** Every server's advisory of a connection it refused: `$SYS.SERVER.<server>.CLIENT.AUTH.ERR`. */
export const AUTH_ERRORS = '$SYS.SERVER.*.CLIENT.AUTH.ERR';
/** What the system identity may do there: read the advisories of refused connections, nothing else (no `$SYS.REQ` requests). */
const SYSTEM_PERMISSIONS = { publish: { deny: ['>'] }, subscribe: { allow: [AUTH_ERRORS, `${natsInboxPrefix('system')}.>`] } };

/**
 * Writes the managed nats-server's configuration: loopback on `port`, JetStream in the fleet's
 * `nats/` folder, and one user per identity under `data/secrets/nats/` (its public key only: the
 * seeds never leave their files) with what it may publish and subscribe to (`natsPermissions`),
 * in the fleet's account; the `system` identity alone in the system account. A connection that is
 * none of them is refused. Written again, then reloaded, whenever the fleet gains or loses an
 * identity or an agent's work changes. Whether the text changed.
 */
export function writeNatsServerConfig(
  paths: FleetPaths,
  port: number,
  users: NatsUsers,
  skipped?: (file: string, reason: string) => void,
): { file: string; changed: boolean } {
  const identities = listNatsIdentities(paths.data, skipped);
  const text = [
    `listen: ${JSON.stringify(`127.0.0.1:${port}`)}`,
    'server_name: "thymos"',
    'jetstream {',
    `  store_dir: ${JSON.stringify(paths.nats)}`,
    '}',
    'accounts {',
    `  ${FLEET_ACCOUNT}: {`,
    '    jetstream: enabled',
    ...userLines(
      identities.filter((i) => i.who !== 'system'),
      users,
    ).map((l) => `  ${l}`),
    '  }',
    `  ${SYSTEM_ACCOUNT}: {`,
    ...userLines(
      identities.filter((i) => i.who === 'system'),
      users,
    ).map((l) => `  ${l}`),
    '  }',
    '}',
    `system_account: ${SYSTEM_ACCOUNT}`,
    '',
  ].join('\n');
  return writeIfChanged(natsServerConfigFile(paths), text, 0o600);
}

/**
 * The fleet's account for a server you run (`thymos nats-config`): `run/nats-account.conf`, mode
 * 0644 (public keys only, for a server that runs as another user). It goes inside that server's
 * `accounts { … }` block, so two fleets' files sit side by side there.
 */
export function natsAccountIncludeFile(paths: FleetPaths): string {
  return join(paths.run, 'nats-account.conf');
}

/**
 * The account of fleet `names` on a server you run: `thymos-fleet-<name>`. Each fleet's users and
 * streams live in their own, so nothing one fleet's identities do reaches another's.
 */
export function natsFleetAccount(names: FleetNames): string {
  return `thymos-fleet-${names.fleet}`;
}

/**
 * Writes the fleet's account for a nats-server you run to include inside its `accounts` block
 * (`accounts { include "…/nats-account.conf" }`): an account of its own with JetStream, holding
 * the same users and permissions as the managed server's, public keys only. Returns the file,
 * whether it changed, the account and who is in it.
 */
export function writeNatsAccountInclude(
  paths: FleetPaths,
  users: NatsUsers,
  skipped?: (file: string, reason: string) => void,
  agents?: AgentKeys,
): { file: string; changed: boolean; account: string; who: string[] } {
  const { text, who } = natsAccountInclude(paths, users, skipped, agents);
  return { ...writeIfChanged(natsAccountIncludeFile(paths), text, 0o644), account: natsFleetAccount(users.names), who };
}

/**
 * Whether `data/run/nats-account.conf` is what `thymos nats-config` would write now: not so once
 * what an identity may do has changed (another Thymos, or a domain whose agents' work changed).
 */
export function natsAccountIncludeIsCurrent(paths: FleetPaths, users: NatsUsers, agents?: AgentKeys): boolean {
  const file = natsAccountIncludeFile(paths);
  return existsSync(file) && readFileSync(file, 'utf8') === natsAccountInclude(paths, users, undefined, agents).text;
}

/**
 * The agents' public keys of a fleet that keeps them in the cluster (`FleetKeys.publicKeys`): the
 * account holds them, whichever host writes it, beside the identities of this data directory.
 */
export type AgentKeys = ReadonlyArray<{ who: NatsIdentity; publicKey: string }>;

/**
 * `data/run/nats-users.conf`, which Thymos before accounts per fleet wrote: a top-level
 * `authorization` block that a second fleet's could not sit beside. When it still holds users,
 * it is emptied to a comment, so a server that includes it and the account at once does not
 * refuse the same user twice. The file when it was emptied now.
 */
export function retireNatsUsersInclude(paths: FleetPaths): string | undefined {
  const file = join(paths.run, 'nats-users.conf');
  const text = `# Thymos writes this fleet's users to nats-account.conf now, in an account of its own:
# include that inside the server's accounts block and remove the include of this file.
`;
  if (!existsSync(file) || readFileSync(file, 'utf8') === text) return undefined;
  writeAtomic(file, text, 0o644);
  return file;
}

function natsAccountInclude(
  paths: FleetPaths,
  users: NatsUsers,
  skipped?: (file: string, reason: string) => void,
  agents?: AgentKeys,
): { text: string; who: string[] } {
  // The system identity is the managed server's own: a server you run has its own system account.
  const local = listNatsIdentities(paths.data, skipped).filter((i) => i.who !== 'system');
  // The cluster's key for an agent is the fleet's, whatever this host holds.
  const byWho = new Map(local.map((i) => [i.who, i]));
  for (const a of agents ?? []) byWho.set(a.who, a);
  const identities = agents ? [...byWho.values()].sort((a, b) => (a.who < b.who ? -1 : a.who > b.who ? 1 : 0)) : local;
  const text = [
    // JSON quoting keeps a line break in the path from ending the comment.
    `# The account of the Thymos fleet ${JSON.stringify(users.names.fleet)} whose data directory is`,
    `# ${JSON.stringify(paths.data)}, written by thymos nats-config. It goes inside the server's accounts block.`,
    `${JSON.stringify(natsFleetAccount(users.names))}: {`,
    '  jetstream: enabled',
    ...userLines(identities, users),
    '}',
    '',
  ].join('\n');
  return { text, who: identities.map((i) => i.who) };
}

/** `users: [...]`, one user per identity with its permissions, indented for a block. */
function userLines(identities: ReadonlyArray<{ who: NatsIdentity; publicKey: string }>, users: NatsUsers): string[] {
  const lines = identities.map((i) => {
    const permissions = i.who === 'system' ? SYSTEM_PERMISSIONS : natsPermissions(users.names, i.who, users.work);
    return `    { nkey: ${JSON.stringify(i.publicKey)}${permissions ? `, permissions: ${JSON.stringify(permissions)}` : ''} } # ${JSON.stringify(i.who)}`;
  });
  return ['  users: [', ...lines, '  ]'];
}

/** Writes `text` to `file` (with `mode`, whole or not at all) unless it holds that already. */
function writeIfChanged(file: string, text: string, mode: number): { file: string; changed: boolean } {
  let before: string | undefined;
  try {
    before = readFileSync(file, 'utf8');
  } catch {
    before = undefined;
  }
  if (before !== text) {
    mkdirSync(dirname(file), { recursive: true });
    writeAtomic(file, text, mode);
  }
  return { file, changed: before !== text };
}

/**
 * Writes the server's users again and has the server at `pid` reload them (SIGHUP); a pid that
 * is gone or not ours is NATS_UNAVAILABLE.
 */
export function reloadNatsUsers(
  paths: FleetPaths,
  port: number,
  pid: number,
  users: NatsUsers,
  skipped?: (file: string, reason: string) => void,
): void {
  writeNatsServerConfig(paths, port, users, skipped);
  try {
    process.kill(pid, 'SIGHUP');
  } catch (err) {
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `the managed nats-server (pid ${pid}) could not be told to reload its users: ${(err as Error).message}`,
    );
  }
}
