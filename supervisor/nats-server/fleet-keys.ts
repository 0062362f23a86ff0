import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

import { jetstream } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';

import type { StreamReplicas, ThymosConfig } from '../../shared/config/index.js';
import { AgentIdSchema } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import {
  admission,
  agentIdentity,
  connectOnce,
  fleetNatsLink,
  listNatsIdentities,
  lostRace,
  type NatsIdentity,
  natsPublicKey,
  readNatsSeed,
  removeNatsIdentity,
  updateStream,
  writeNatsSeed,
} from '../../shared/nats/index.js';
import { FleetNames, parseJsonOrUndefined } from '../../shared/protocol/index.js';

/**
 * A fleet on several hosts keeps one NATS key per agent for the whole fleet, in the cluster's key
 * bucket (`<FLEET>_KEYS`), sealed with the fleet's secret (`[cluster] key_env`). The host that starts
 * an agent takes its key from there into its own data directory (mode 0600) and deletes it when the
 * agent stops there, so a host holds only the keys of the agents it runs. Only the supervisor's
 * NATS identity may read the bucket (no other identity is allowed JetStream's API for it), and what
 * the bucket's nodes keep on disk is sealed: neither another host's agents nor a copy of a node's
 * store reads a key.
 */

/** Whether this fleet keeps its agents' keys in the cluster: placement by lease, with the fleet's own identities on a server it runs. */
export function keysInCluster(config: ThymosConfig): boolean {
  return config.cluster.enabled && config.nats.identities && config.nats.url !== undefined && config.natsCredentialsPath === undefined;
}

/** The least length of the fleet's secret: 32 characters of `openssl rand -base64 32` hold 192 bits. */
const SECRET_MIN_LENGTH = 32;

/**
 * The key that seals the agents' keys: derived (HKDF-SHA-256) from the secret in the environment
 * variable `[cluster] key_env` and the fleet's name, so the same secret seals two fleets' keys
 * apart. Unset, or shorter than 32 characters: CONFIG_INVALID naming the variable.
 */
export function fleetKeySecret(config: ThymosConfig): Buffer {
  const name = config.cluster.key_env;
  const value = process.env[name];
  if (!value || value.length < SECRET_MIN_LENGTH) {
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `[cluster] key_env: the environment variable ${name} ${value ? `holds ${value.length} characters, expected at least ${SECRET_MIN_LENGTH}` : 'is not set'}; it holds the secret that seals the agents' NATS keys in the cluster, the same on every host: export ${name}="$(openssl rand -base64 32)" where the fleet was set up, and the same value on every other host`,
      { location: { file: config.file, path: 'cluster.key_env' } },
    );
  }
  return Buffer.from(hkdfSync('sha256', value, 'thymos fleet keys', config.fleet.name, 32));
}

/** What the bucket holds for one agent: its public key in the clear (the servers' users), its seed sealed. */
const SealedKeySchema = z.object({ who: z.string(), public_key: z.string().regex(/^U[A-Z2-7]{55}$/), sealed: z.string() });
type SealedKey = z.infer<typeof SealedKeySchema>;

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * `seed` sealed with AES-256-GCM under `secret`. The identity and public key are bound in as
 * associated data, so a sealed seed moved to another agent's key, or under another public key,
 * does not open.
 */
export function sealSeed(secret: Buffer, who: NatsIdentity, seed: Uint8Array): SealedKey {
  const publicKey = natsPublicKey(seed);
  if (!publicKey) throw new ThymosError(ErrorCode.CONFIG_INVALID, `the NATS identity ${who} is no user nkey seed: it cannot be sealed`);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', secret, iv);
  cipher.setAAD(Buffer.from(`${who}\n${publicKey}`));
  const body = Buffer.concat([cipher.update(seed), cipher.final()]);
  return { who, public_key: publicKey, sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
}

/**
 * The seed `sealed` holds for `who`, checked: it opens under `secret`, is a user seed, and its
 * public key is the one written beside it. Anything else is CONFIG_INVALID naming the key.
 */
export function openSeed(secret: Buffer, who: NatsIdentity, value: SealedKey, where: string): Uint8Array {
  const raw = Buffer.from(value.sealed, 'base64');
  let seed: Uint8Array;
  try {
    if (value.who !== who || raw.length <= IV_BYTES + TAG_BYTES) throw new Error('not sealed for it');
    const decipher = createDecipheriv('aes-256-gcm', secret, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(`${who}\n${value.public_key}`));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    seed = new Uint8Array(Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]));
  } catch {
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `${where} does not open with this host's fleet secret: every host needs the same [cluster] key_env value as the host that sealed it`,
    );
  }
  if (natsPublicKey(seed) !== value.public_key)
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `${where} holds a seed whose public key is not the one written beside it`);
  return seed;
}

const agentKey = (id: string) => `agent.${id}`;

export interface FleetKeysOptions {
  nc: NatsConnection;
  names: FleetNames;
  replicas: StreamReplicas;
  secret: Buffer;
  /** How long one request to JetStream may go unanswered. */
  timeoutMs?: number;
}

/** The fleet's key bucket, as one host's supervisor (or `thymos nats-config`) reads and writes it. */
export class FleetKeys {
  readonly #kv: KV;
  readonly #secret: Buffer;
  readonly #bucket: string;

  private constructor(kv: KV, secret: Buffer, bucket: string) {
    this.#kv = kv;
    this.#secret = secret;
    this.#bucket = bucket;
  }

  /** Opens the bucket, made on `replicas` nodes when missing. */
  static async open(o: FleetKeysOptions): Promise<FleetKeys> {
    const js = jetstream(o.nc, { timeout: o.timeoutMs ?? 5000 });
    // Reads go to the stream's leader: a replica of a new bucket may not have caught up on nats-server 2.9.
    const kv = await new Kvm(js).create(o.names.keysBucket, { replicas: o.replicas, history: 1, allow_direct: false });
    // A bucket made before on another number of nodes is brought to `replicas`, as the fleet's streams are.
    const jsm = await js.jetstreamManager();
    const was = (await jsm.streams.info(`KV_${o.names.keysBucket}`)).config;
    if (was.num_replicas !== o.replicas) await updateStream(jsm, `KV_${o.names.keysBucket}`, was, o.replicas);
    return new FleetKeys(kv, o.secret, o.names.keysBucket);
  }

  /**
   * The public key of each agent's key the bucket holds, among agents `ids` (those of the domain):
   * the users every node of the cluster admits. Each is opened first, so a value written without
   * the fleet's secret, or under another agent's key, is refused (CONFIG_INVALID naming it) rather
   * than given a user.
   */
  async publicKeys(ids: readonly string[]): Promise<Array<{ who: NatsIdentity; publicKey: string }>> {
    const out: Array<{ who: NatsIdentity; publicKey: string }> = [];
    for (const id of [...ids].sort()) {
      const value = await this.#read(agentKey(id));
      if (!value) continue;
      openSeed(this.#secret, agentIdentity(id), value, `${this.#bucket} ${agentKey(id)}`);
      out.push({ who: agentIdentity(id), publicKey: value.public_key });
    }
    return out;
  }

  /**
   * Puts the keys of agents `ids` that this host's data directory holds and the bucket does not
   * into the bucket, each by a create that fails if another host put one first. Where the bucket
   * already holds another key for an agent, the bucket's is the fleet's: the local one is deleted
   * (`replaced`), and the agent starts here with the bucket's. Running it twice puts nothing the
   * second time.
   */
  async publish(dataDir: string, ids: readonly string[]): Promise<{ published: string[]; replaced: string[] }> {
    const published: string[] = [];
    const replaced: string[] = [];
    for (const id of ids) {
      const who = agentIdentity(id);
      const seed = readNatsSeed(dataDir, who);
      if (!seed) continue;
      const held = await this.#read(agentKey(id));
      if (!held) {
        try {
          await this.#kv.create(agentKey(id), JSON.stringify(sealSeed(this.#secret, who, seed)));
          published.push(id);
          continue;
        } catch (err) {
          // Another host put one first: it is read again below. Anything else leaves the key here.
          if (!lostRace(err)) throw err;
        }
      }
      const now = held ?? (await this.#read(agentKey(id)));
      if (now && now.public_key !== natsPublicKey(seed)) {
        removeNatsIdentity(dataDir, who);
        replaced.push(id);
      }
    }
    return { published, replaced };
  }

  /**
   * Writes agent `id`'s key from the bucket into this host's data directory, for the agent about
   * to start here; false when the bucket holds none. Writing it again changes nothing.
   */
  async fetch(dataDir: string, id: string): Promise<boolean> {
    const who = agentIdentity(id);
    const value = await this.#read(agentKey(id));
    if (!value) return false;
    const seed = openSeed(this.#secret, who, value, `${this.#bucket} ${agentKey(id)}`);
    if (natsPublicKey(readNatsSeed(dataDir, who) ?? new Uint8Array()) !== value.public_key) writeNatsSeed(dataDir, who, seed);
    return true;
  }

  /**
   * Deletes from this host's data directory the keys of the agents that are not `running` here and
   * that the bucket holds, the same key: one the bucket does not hold (its publishing failed, or it
   * was made here since) is kept, never lost. Those deleted.
   */
  async keepOnly(dataDir: string, running: (id: string) => boolean): Promise<string[]> {
    const deleted: string[] = [];
    for (const { who, publicKey } of listNatsIdentities(dataDir)) {
      const id = who.startsWith('agent-') ? who.slice('agent-'.length) : undefined;
      if (id === undefined || running(id) || !AgentIdSchema.safeParse(id).success) continue;
      if ((await this.#read(agentKey(id)))?.public_key !== publicKey) continue;
      if (removeNatsIdentity(dataDir, who)) deleted.push(id);
    }
    return deleted;
  }

  async #read(key: string): Promise<SealedKey | undefined> {
    const entry = await this.#kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    const parsed = SealedKeySchema.safeParse(parseJsonOrUndefined(entry.string()));
    if (!parsed.success)
      throw new ThymosError(
        ErrorCode.CONFIG_INVALID,
        `${this.#bucket} holds at ${key} a value Thymos did not write: delete the key, then run thymos nats-config where the agent's key is`,
      );
    return parsed.data;
  }
}

/**
 * Runs `task` on the fleet's key bucket, reached as the supervisor through `servers` (a command's
 * connection, closed after). Unreachable, or the supervisor not admitted: NATS_UNAVAILABLE naming
 * the servers; the fleet's secret unset: CONFIG_INVALID naming its variable.
 */
export async function withFleetKeys<T>(config: ThymosConfig, servers: string, task: (keys: FleetKeys) => Promise<T>): Promise<T> {
  const secret = fleetKeySecret(config);
  const nc = await connectOnce(servers, fleetNatsLink(config, 'supervisor', servers), 5000, 'supervisor').catch((err: unknown) => {
    const refused = /authorization violation/i.test((err as Error).message);
    throw new ThymosError(
      refused ? ErrorCode.UNAUTHORIZED : ErrorCode.NATS_UNAVAILABLE,
      `the cluster's key bucket cannot be read: ${refused ? "the supervisor's identity is not admitted" : 'no server answers'} at ${servers} (${(err as Error).message})`,
    );
  });
  try {
    const names = new FleetNames(config.fleet.name);
    return await task(await FleetKeys.open({ nc, names, replicas: config.cluster.replicas, secret }));
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/**
 * Whether the cluster at `servers` has the fleet's users in force: it refuses a connection with no
 * identity. One that admits anyone has not been given the fleet's account yet (a cluster being set
 * up), and its JetStream is not the fleet's: no key goes there.
 */
export async function clusterEnforcesUsers(config: ThymosConfig, servers: string): Promise<boolean> {
  const nobody = await admission(servers, { seed: undefined, tls: config.natsTls }, 3000);
  if (nobody.outcome === 'unreachable')
    throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `no server of the cluster answers at ${servers}: ${nobody.reason ?? 'no answer'}`);
  return nobody.outcome === 'refused';
}
