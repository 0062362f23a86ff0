import { join } from 'node:path';

import type { FleetPaths } from '../../shared/config/fleet-paths.js';
import { Pm2Names } from '../../shared/config/fleet-paths.js';
import { readFleetInfo } from '../../shared/config/fleet-runtime.js';
import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { connectsAs } from '../../shared/nats/nats-connection.js';
import { agentIdentity, ensureNatsIdentity, listNatsIdentities, readNatsSeed, removeNatsIdentity } from '../../shared/nats/nats-identity.js';
import type { Logger } from '../../shared/platform/logger.js';
import { logOffset, settledLog } from './log-tail.js';
import { writeNatsServerConfig } from './nats-server-config.js';
import type { ProcessManager } from './process-manager.js';

export interface NatsAccessOptions {
  config: ThymosConfig;
  paths: FleetPaths;
  processes: ProcessManager;
  natsUrl: string;
  logger: Logger;
}

/** How long a reload of the server's users may take to admit a new identity. */
const ADMITTED_WITHIN_MS = 10_000;

/**
 * Who the managed nats-server admits, kept by the supervisor: when it starts, every agent of the
 * domain gets its own identity and an agent that left the domain loses its own and, with the
 * reload, its access (`sync`); an agent it has not seen gets one before its start (`grant`).
 * Each change writes the server's users again and reloads them, checked by connecting as a new
 * identity. With a server the user runs (`[nats] url`)
 * nothing here applies. Changes run one at a time; granting an identity twice does nothing
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
   * as an identity it made. The agents that gained and lost an identity.
   */
  sync(ids: readonly string[]): Promise<{ granted: string[]; revoked: string[] }> {
    if (!this.managed) return Promise.resolve({ granted: [], revoked: [] });
    return this.#serial(async () => {
      const keep = new Set(ids);
      const revoked = listNatsIdentities(this.#o.paths.data)
        .map((i) => i.who)
        .filter((who) => who.startsWith('agent-') && !keep.has(who.slice('agent-'.length)))
        .map((who) => who.slice('agent-'.length));
      for (const id of revoked) removeNatsIdentity(this.#o.paths.data, agentIdentity(id));
      const granted = ids.filter((id) => ensureNatsIdentity(this.#o.paths.data, agentIdentity(id)).created);
      if (granted.length > 0 || revoked.length > 0) await this.#reloadUntilAdmitted(granted[0]);
      if (granted.length > 0) this.#o.logger.info({ agents: granted.length }, 'nats identities made for the agents of the domain that had none');
      if (revoked.length > 0) this.#o.logger.info({ agents: revoked }, 'nats identities revoked: agents no longer in the domain');
      return { granted, revoked };
    });
  }

  /** Agent `id` may connect as itself once this settles (an agent `sync` has not seen yet gets its identity now). */
  grant(id: string): Promise<void> {
    if (!this.managed || readNatsSeed(this.#o.paths.data, agentIdentity(id))) return Promise.resolve();
    return this.#serial(async () => {
      const t0 = performance.now();
      if (!ensureNatsIdentity(this.#o.paths.data, agentIdentity(id)).created) return;
      await this.#reloadUntilAdmitted(id);
      this.#o.logger.info({ agent: id, ms: Math.round(performance.now() - t0) }, 'nats identity granted');
    });
  }

  /**
   * Reloads the server's users and waits until it admits agent `id` (when given): the signal is
   * sent again every second while it does not, for up to 10 s, and the error then quotes the
   * server's log.
   */
  async #reloadUntilAdmitted(id: string | undefined): Promise<void> {
    const log = join(this.#o.paths.logs, 'nats-server.log');
    const from = logOffset(log);
    const deadline = performance.now() + ADMITTED_WITHIN_MS;
    const seed = id === undefined ? undefined : readNatsSeed(this.#o.paths.data, agentIdentity(id));
    for (;;) {
      await this.#reload();
      if (!seed || (await connectsAs(this.#o.natsUrl, seed, Math.min(1000, deadline - performance.now())))) return;
      if (performance.now() >= deadline) {
        const said = (await settledLog(log, from)).trim().split('\n').slice(-3).join(' | ');
        throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `nats-server did not admit ${agentIdentity(id!)} within ${ADMITTED_WITHIN_MS} ms of reloading its users; it said: ${said || 'nothing'} (log: ${log})`);
      }
    }
  }

  /** Writes the server's users again and has it reload them (SIGHUP). */
  async #reload(): Promise<void> {
    const port = readFleetInfo(this.#o.config)?.nats_port;
    const nats = await this.#o.processes.describe(Pm2Names.nats);
    if (!port || !nats?.pid) throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, 'the managed nats-server is not running: its users cannot be reloaded (thymos up starts it)');
    writeNatsServerConfig(this.#o.paths, port);
    process.kill(nats.pid, 'SIGHUP');
  }

  #serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }
}
