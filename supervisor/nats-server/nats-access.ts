import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { type FleetPaths, Pm2Names, readFleetInfo, type ThymosConfig } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import {
  agentIdentity,
  connectsAs,
  ensureNatsIdentity,
  natsCredentialsFile,
  readNatsSeed,
  removeNatsIdentity,
  staleAgentIdentities,
} from '../../shared/nats/index.js';
import { isAlive, type Logger } from '../../shared/platform/index.js';
import { logOffset, settledLog } from '../pm2/log-tail.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import type { FleetKeys } from './fleet-keys.js';
import { type NatsUsers, reloadNatsUsers, writeNatsServerConfig } from './server-config.js';

export interface NatsAccessOptions {
  config: ThymosConfig;
  paths: FleetPaths;
  processes: ProcessManager;
  natsUrl: string;
  logger: Logger;
  /** What the server's users may do (`natsPermissions`): the fleet's names and each agent's work. */
  users: NatsUsers;
  /**
   * The cluster's key bucket, when the fleet keeps its agents' keys there (`keysInCluster`): an
   * agent's key is taken from it as the agent starts here, and deleted from here as it stops.
   */
  keys?: FleetKeys | undefined;
}

/** How long a reload of the server's users may take to admit a new identity. */
const ADMITTED_WITHIN_MS = 10_000;

/**
 * Who the managed nats-server admits, kept by the supervisor: when it starts, every agent of the
 * domain gets its own identity and an agent that left the domain loses its own and, with the
 * reload, its access (`sync`); an agent it has not seen gets one before its start (`grant`).
 * Each change writes the server's users again and reloads them, checked by connecting as a new
 * identity. With a server the user runs (`[nats] url`) Thymos cannot change its users: `grant`
 * only refuses to start an agent that has no key there (`[nats] identities`; `thymos nats-config`
 * makes them). Changes run one at a time; granting an identity twice does nothing
 * the second time.
 */
export class NatsAccess {
  readonly #o: NatsAccessOptions;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: NatsAccessOptions) {
    this.#o = options;
  }

  /** True when the fleet's NATS server is the one `thymos up` runs (`data/run/fleet.json` says so). */
  get managed(): boolean {
    return readFleetInfo(this.#o.config)?.managed_nats === true;
  }

  /**
   * Makes the server admit exactly the agents of the domain (`ids`): those without an identity get
   * one, those no longer in it lose theirs, then one reload for all of it, checked by connecting
   * as a new identity (admitted), as a removed one and as nobody (both refused). If the reload
   * fails, the identities made for it are removed again. The agents that gained and lost one.
   */
  sync(ids: readonly string[]): Promise<{ granted: string[]; revoked: string[] }> {
    if (!this.managed) return Promise.resolve({ granted: [], revoked: [] });
    return this.#serial(async () => {
      const data = this.#o.paths.data;
      const revoked = staleAgentIdentities(data, ids);
      const revokedSeed = revoked.length > 0 ? readNatsSeed(data, agentIdentity(revoked[0]!)) : undefined;
      for (const id of revoked) removeNatsIdentity(data, agentIdentity(id));
      const granted = ids.filter((id) => ensureNatsIdentity(data, agentIdentity(id)).created);
      // An agent's work may have changed with the domain: its permissions are written again too.
      const port = readFleetInfo(this.#o.config)?.nats_port;
      const changed = port ? writeNatsServerConfig(this.#o.paths, port, this.#o.users, this.#skipped).changed : true;
      if (granted.length > 0 || revoked.length > 0 || changed) {
        try {
          await this.#reloadUntil(granted[0], revokedSeed);
        } catch (err) {
          for (const id of granted) removeNatsIdentity(data, agentIdentity(id));
          throw err;
        }
      }
      if (granted.length > 0)
        this.#o.logger.info({ agents: granted.length }, 'nats identities made for the agents of the domain that had none');
      if (revoked.length > 0) this.#o.logger.info({ agents: revoked }, 'nats identities revoked: agents no longer in the domain');
      return { granted, revoked };
    });
  }

  /**
   * Agent `id` may connect as itself once this settles: an agent `sync` has not seen gets its
   * identity now (removed again if the server could not be made to admit it, so the next start
   * tries again).
   */
  grant(id: string): Promise<void> {
    if (this.#o.keys) return this.#clusterGrant(this.#o.keys, id);
    if (!this.managed) return this.#ownServerGrant(id);
    return this.#serial(async () => {
      const t0 = performance.now();
      if (!ensureNatsIdentity(this.#o.paths.data, agentIdentity(id)).created) return;
      try {
        await this.#reloadUntil(id, undefined);
      } catch (err) {
        removeNatsIdentity(this.#o.paths.data, agentIdentity(id));
        throw err;
      }
      this.#o.logger.info({ agent: id, ms: Math.round(performance.now() - t0) }, 'nats identity granted');
    });
  }

  /**
   * Reloads the server's users until it admits agent `admit` (when given) and refuses `refused`
   * (when given) and a connection with no identity: the signal is sent again every second while
   * it does not, for up to 10 s; the error then quotes the server's log.
   */
  async #reloadUntil(admit: string | undefined, refused: Uint8Array | undefined): Promise<void> {
    const log = join(this.#o.paths.logs, 'nats-server.log');
    const from = logOffset(log);
    const deadline = performance.now() + ADMITTED_WITHIN_MS;
    const seed = admit === undefined ? undefined : readNatsSeed(this.#o.paths.data, agentIdentity(admit));
    for (;;) {
      await this.#reload();
      const wait = Math.min(1000, Math.max(0, deadline - performance.now()));
      const admitted = !seed || (await connectsAs(this.#o.natsUrl, { seed }, wait));
      const open = await connectsAs(this.#o.natsUrl, {}, 0);
      const stale = refused !== undefined && (await connectsAs(this.#o.natsUrl, { seed: refused }, 0));
      if (admitted && !open && !stale) return;
      if (performance.now() >= deadline) {
        const said = (await settledLog(log, from)).trim().split('\n').slice(-3).join(' | ');
        const what = !admitted
          ? `did not admit ${agentIdentity(admit!)}`
          : open
            ? "still admits connections with no identity (it runs without the fleet's users: thymos down, then thymos up, restarts it with them)"
            : 'still admits a removed identity';
        throw new ThymosError(
          ErrorCode.NATS_UNAVAILABLE,
          `nats-server ${what} within ${ADMITTED_WITHIN_MS} ms of reloading its users; it said: ${said || 'nothing'} (log: ${log})`,
        );
      }
      if (admitted) await sleep(50);
    }
  }

  /** Writes the server's users again and has it reload them (SIGHUP). */
  async #reload(): Promise<void> {
    const port = readFleetInfo(this.#o.config)?.nats_port;
    const nats = await this.#o.processes.describe(Pm2Names.nats);
    if (!port || nats?.status !== 'online' || !nats.pid || !isAlive(nats.pid)) {
      throw new ThymosError(
        ErrorCode.NATS_UNAVAILABLE,
        'the managed nats-server is not running: its users cannot be reloaded (thymos up starts it)',
      );
    }
    reloadNatsUsers(this.#o.paths, port, nats.pid, this.#o.users, this.#skipped);
  }

  readonly #skipped = (file: string, reason: string) =>
    this.#o.logger.warn({ file, reason }, "a NATS identity file was left out of the server's users");

  /**
   * Agent `id` stopped on this host: with its key kept in the cluster, this host's copy is deleted
   * (it is taken again at its next start here). Otherwise nothing: the host keeps every key.
   */
  release(id: string): void {
    if (this.#o.keys) removeNatsIdentity(this.#o.paths.data, agentIdentity(id));
  }

  /** With its key in the cluster's bucket, an agent starts with it written here; with none there, it does not start. */
  async #clusterGrant(keys: FleetKeys, id: string): Promise<void> {
    if (await keys.fetch(this.#o.paths.data, id)) return;
    throw new ThymosError(
      ErrorCode.AGENT_START_FAILED,
      `${id} has no NATS key in the cluster's key bucket ${this.#o.users.names.keysBucket}: run thymos nats-config on a host of the fleet, then give every nats-server of the cluster the account it writes and reload them`,
    );
  }

  /** On a server the user runs with the fleet's users (`[nats] identities`), an agent must have its key already: Thymos cannot give that server a new user. */
  async #ownServerGrant(id: string): Promise<void> {
    const { config } = this.#o;
    if (!config.nats.url) return;
    if (config.natsCredentialsPath !== undefined) {
      const file = natsCredentialsFile(config, agentIdentity(id));
      if (existsSync(file)) return;
      throw new ThymosError(
        ErrorCode.AGENT_START_FAILED,
        `${id} has no NATS credentials file ${file} ([nats] credentials): make one for user ${agentIdentity(id)} in the fleet's account (e.g. nsc generate creds)`,
      );
    }
    if (!config.nats.identities || readNatsSeed(config.dataPath, agentIdentity(id))) return;
    throw new ThymosError(
      ErrorCode.AGENT_START_FAILED,
      `${id} has no NATS identity, and the nats-server at ${config.nats.url} is yours: run thymos nats-config, then reload that server, to give it one`,
    );
  }

  #serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }
}
