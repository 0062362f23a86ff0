import { createPrivateKey, createPublicKey, type KeyObject, randomBytes, sign } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { Prefix } from '@nats-io/nkeys';
// The seed codec is not in nkeys' public entry point; the package is pinned (package.json) for it.
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import type { Authenticator } from '@nats-io/transport-node';

import { readFleetInfo } from '../config/fleet-runtime.js';
import type { NatsTlsFiles, ThymosConfig } from '../config/thymos-config.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import { writeAtomic } from '../platform/write-atomic.js';

/**
 * Who a process is on the fleet's NATS: the supervisor, the client library and CLI, the approver
 * (whoever decides what waits for a person: `thymos approve`, the library's `approver()`), a spare
 * of the warm pool before its claim, or one agent; and `system`, the supervisor's second
 * connection, to the managed server's system account (it reads the server's advisories there).
 * Each has its own NATS user (an nkey), so the managed nats-server knows who connects and refuses
 * anyone else. The approver is apart from the client so that a process that calls agents' tools
 * with the client's key cannot also approve those calls: only a holder of the approver's key can.
 */
export type NatsIdentity = 'supervisor' | 'client' | 'approver' | 'spare' | 'system' | `agent-${string}`;

export const agentIdentity = (id: string): NatsIdentity => `agent-${id}`;

/**
 * Where replies to identity `who`'s requests come: `_INBOX.<who>` (e.g. `_INBOX.agent-elder_rowan`),
 * the only inboxes its NATS user may subscribe to, so nobody else reads its replies.
 */
export const natsInboxPrefix = (who: NatsIdentity): string => `_INBOX.${who}`;

/**
 * Where identity `who` may publish answers. A request's answer comes to
 * `_INBOX.<asker>.<asked>.<random>` (`replyInbox`), an inbox of the asker that names the identity
 * it asked, so nats-server lets only that identity answer there. Not nats-server's
 * `allow_responses`, which lets a connection publish on the reply subject of any message it
 * receives, whoever sent it: an agent could name any subject as the reply of a message to itself
 * and publish there.
 */
export const natsAnswers = (who: NatsIdentity): string => `_INBOX.*.${who}.>`;

/** The folder of a fleet's NATS identities: `data/secrets/nats/`, mode 0700. */
export function natsSecretsDir(dataPath: string): string {
  return join(dataPath, 'secrets', 'nats');
}

/** Where identity `who` keeps its nkey seed: `data/secrets/nats/<who>.nk`, mode 0600. */
export function natsIdentityFile(dataPath: string, who: NatsIdentity): string {
  return join(natsSecretsDir(dataPath), `${who}.nk`);
}

/**
 * The seed of identity `who`, or undefined when the fleet has none for it (a fleet whose NATS
 * server the user runs, or one set up before identities existed). The seed is read from its
 * file, never from the environment or the command line, and never logged.
 */
export function readNatsSeed(dataPath: string, who: NatsIdentity): Uint8Array | undefined {
  const file = natsIdentityFile(dataPath, who);
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `the NATS identity ${file} cannot be read: ${(err as Error).message}`);
  }
  // Only its owner may read it: a file restored or copied with a wider mode is narrowed again.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const seed = new TextEncoder().encode(text);
  if (!userKey(seed)) {
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `the NATS identity ${file} does not hold a user nkey seed (a line starting SU); delete it and run thymos up (or thymos nats-config, for a server you run) to make a new one`,
    );
  }
  return seed;
}

/**
 * The seed a process of this fleet connects to `servers` with as `who`: from the fleet's identity
 * files, and only when `servers` is the server the fleet's last `thymos up` recorded
 * (`data/run/fleet.json`): the one `thymos up` manages, or one the user runs (`[nats] url`) set up
 * with the fleet's users (`[nats] identities`, `thymos nats-config`). None for any other server, so
 * a key never signs in anywhere else (`thymos agent --nats-url` by hand, a stale fleet.json).
 */
export function fleetNatsSeed(config: ThymosConfig, who: NatsIdentity, servers: string): Uint8Array | undefined {
  const info = readFleetInfo(config);
  // A host that runs no `thymos up` (a client on another machine) has no fleet info: its `[nats] url` with identities says it all.
  if (!info) return config.nats.identities && config.nats.url === servers ? readNatsSeed(config.dataPath, who) : undefined;
  if (servers !== info.nats_url) return undefined;
  if (info.managed_nats) return readNatsSeed(config.dataPath, who);
  return config.nats.identities && config.nats.url === info.nats_url ? readNatsSeed(config.dataPath, who) : undefined;
}

/**
 * What a process of this fleet connects to `servers` with as `who`: its key (`fleetNatsSeed`);
 * for the server of `[nats] url`, its credentials file (`[nats] credentials`); and, whatever
 * `servers` says (a URL spelt otherwise is still no reason to talk in the clear), the TLS files of
 * `[nats] tls_*`, which make TLS required. A credentials file that is missing, or that others may
 * read, is NATS_UNAVAILABLE naming it.
 */
export function fleetNatsLink(
  config: ThymosConfig,
  who: NatsIdentity,
  servers: string,
): { seed: Uint8Array | undefined; creds?: Uint8Array; tls: NatsTlsFiles | undefined } {
  const own = config.nats.url !== undefined && servers === config.nats.url;
  const creds = own && config.natsCredentialsPath !== undefined ? readCredentials(natsCredentialsFile(config, who)) : undefined;
  return { seed: fleetNatsSeed(config, who, servers), ...(creds ? { creds } : {}), tls: config.natsTls };
}

/** Where identity `who` finds its credentials file (`[nats] credentials`): `<folder>/<who>.creds`. */
export function natsCredentialsFile(config: ThymosConfig, who: NatsIdentity): string {
  return join(config.natsCredentialsPath ?? '', `${who}.creds`);
}

/** The text of a credentials file, which holds a seed: it must exist and be the owner's alone. */
function readCredentials(file: string): Uint8Array {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `no NATS credentials file ${file} ([nats] credentials): make it for this identity (e.g. nsc generate creds -n <identity> > ${file}) and chmod 600 it`,
    );
  }
  if ((mode & 0o077) !== 0)
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `the NATS credentials file ${file} may be read by others (mode ${(mode & 0o777).toString(8)}): it holds a seed; chmod 600 it`,
    );
  return readFileSync(file);
}

/**
 * Makes identity `who` if the fleet has none yet: a new user nkey whose seed is written to its
 * file (mode 0600, in a folder of mode 0700) through a temporary file, so a crash leaves either
 * no identity or a whole one. Returns its public key and whether it was made now. Running it
 * twice makes nothing the second time.
 */
export function ensureNatsIdentity(dataPath: string, who: NatsIdentity): { publicKey: string; created: boolean } {
  secretsDir(dataPath);
  const existing = readNatsSeed(dataPath, who);
  if (existing) return { publicKey: userKey(existing)!.nkey, created: false };
  const seed = Codec.encodeSeed(Prefix.User, new Uint8Array(randomBytes(32)));
  writeNatsSeed(dataPath, who, seed);
  return { publicKey: userKey(seed)!.nkey, created: true };
}

/**
 * Writes identity `who`'s seed to its file (mode 0600, in a folder of mode 0700) through a
 * temporary file, so a crash leaves the old file or the new one, whole. Writing the same seed
 * again changes nothing.
 */
export function writeNatsSeed(dataPath: string, who: NatsIdentity, seed: Uint8Array): void {
  if (!userKey(seed)) throw new ThymosError(ErrorCode.CONFIG_INVALID, `the NATS identity ${who} must be a user nkey seed (SU…)`);
  secretsDir(dataPath);
  writeAtomic(natsIdentityFile(dataPath, who), `${new TextDecoder().decode(seed)}\n`, 0o600);
}

/** The folder of the fleet's identities, made if missing and narrowed to its owner (mode 0700) if it was wider. */
function secretsDir(dataPath: string): void {
  const dir = natsSecretsDir(dataPath);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** The public key (U…) of a user seed, or undefined when `seed` is none. */
export function natsPublicKey(seed: Uint8Array): string | undefined {
  return userKey(seed)?.nkey;
}

/** The agents that have an identity but are not among `ids` (agents gone from the domain): theirs are to be deleted. */
export function staleAgentIdentities(dataPath: string, ids: readonly string[]): string[] {
  const keep = new Set(ids);
  return listNatsIdentities(dataPath)
    .map((i) => i.who)
    .filter((who) => who.startsWith('agent-') && !keep.has(who.slice('agent-'.length)))
    .map((who) => who.slice('agent-'.length));
}

/** Deletes identity `who`; true if there was one. Its holder is refused from the next reload of the server's authorization on. */
export function removeNatsIdentity(dataPath: string, who: NatsIdentity): boolean {
  const file = natsIdentityFile(dataPath, who);
  if (!existsSync(file)) return false;
  rmSync(file, { force: true });
  return true;
}

/**
 * Every identity the fleet has, with its public key: the users the managed nats-server admits. A
 * file that holds no seed is left out (that identity is refused, the others still admitted) and
 * named in `skipped`.
 */
export function listNatsIdentities(
  dataPath: string,
  skipped: (file: string, reason: string) => void = () => undefined,
): Array<{ who: NatsIdentity; publicKey: string }> {
  const dir = natsSecretsDir(dataPath);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.nk'))
    .sort()
    .flatMap((f) => {
      const who = f.slice(0, -'.nk'.length) as NatsIdentity;
      try {
        const seed = readNatsSeed(dataPath, who);
        return seed ? [{ who, publicKey: userKey(seed)!.nkey }] : [];
      } catch (err) {
        skipped(join(dir, f), (err as Error).message);
        return [];
      }
    });
}

/** The DER header of a PKCS #8 Ed25519 private key, before its 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * Signs in as the identity whose seed is `seed`, as nats.js's `nkeyAuthenticator` does, with
 * Node's own Ed25519 instead of the JavaScript one nkeys carries: that one cost about 30 ms of
 * CPU for a process's first signature and 9 ms for its second, on every agent's start; this
 * one a fraction of a millisecond. The public key is worked out once, the nonce signed at each
 * (re)connect.
 */
export function nkeySigner(seed: Uint8Array): Authenticator {
  const user = userKey(seed);
  if (!user) throw new ThymosError(ErrorCode.CONFIG_INVALID, 'a NATS identity must be a user nkey seed (SU…)');
  return (nonce?: string) => ({ nkey: user.nkey, sig: nonce ? sign(null, Buffer.from(nonce), user.key).toString('base64') : '' });
}

/** The Ed25519 key and public nkey (U…) of a user seed (S U…), with Node's crypto; undefined for anything else. */
function userKey(seed: Uint8Array): { key: KeyObject; nkey: string } | undefined {
  let decoded: { buf: Uint8Array; prefix: number };
  try {
    decoded = Codec.decodeSeed(seed);
  } catch {
    return undefined;
  }
  if (decoded.prefix !== Prefix.User || decoded.buf.length !== 32) return undefined;
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, decoded.buf]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(-32);
  return { key, nkey: new TextDecoder().decode(Codec.encode(Prefix.User, new Uint8Array(publicKey))) };
}
