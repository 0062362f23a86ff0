import { jetstream } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';

import { toThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import { type FleetNames, parseJsonOrUndefined, parseReconcileContext, type ReconcileContext } from '../../shared/protocol/index.js';
import type { Journal } from './reconcile-journal.js';

/** The key of the journal in the fleet's placement bucket. */
const JOURNAL_KEY = 'journal';

const EntrySchema = z.object({ at: z.string(), host: z.string(), token: z.number().int(), context: z.unknown() });

/**
 * The reconcile journal of a fleet under placement by lease: the key `journal` of its placement
 * bucket, on `[cluster] replicas` nodes, written by the coordinator only. A coordinator lost in the
 * middle of a reconcile leaves it there; the host that takes the role over finishes it, moving only
 * what the first did not reach (a reconcile is level-triggered). A journal that cannot be read or
 * finished is set aside under `journal.bad`, with an error in the log. Writing or deleting it twice
 * changes nothing more than once.
 */
export class ClusterJournal implements Journal {
  readonly #kv: KV;
  readonly #host: string;
  readonly #token: () => number | undefined;
  readonly #logger: Logger;

  private constructor(kv: KV, host: string, token: () => number | undefined, logger: Logger) {
    this.#kv = kv;
    this.#host = host;
    this.#token = token;
    this.#logger = logger;
  }

  /** The journal in the placement bucket (which the fleet's lease made), written under the coordinator role's `token`. */
  static async open(o: {
    nc: NatsConnection;
    names: FleetNames;
    host: string;
    token: () => number | undefined;
    logger: Logger;
  }): Promise<ClusterJournal> {
    const kv = await new Kvm(jetstream(o.nc)).open(o.names.placementBucket);
    return new ClusterJournal(kv, o.host, o.token, o.logger);
  }

  async begin(context: ReconcileContext): Promise<void> {
    const token = this.#token();
    try {
      if (token === undefined) throw new Error('this host does not hold the coordinator role');
      await this.#kv.put(JOURNAL_KEY, JSON.stringify({ at: new Date().toISOString(), host: this.#host, token, context }));
    } catch (err) {
      this.#logger.warn(
        { err: toThymosError(err).message },
        'the reconcile journal was not written: a coordinator lost now would leave this reconcile unfinished',
      );
    }
  }

  async end(): Promise<void> {
    try {
      if ((await this.#kv.get(JOURNAL_KEY))?.operation === 'PUT') await this.#kv.delete(JOURNAL_KEY);
    } catch (err) {
      this.#logger.warn(
        { err: toThymosError(err).message },
        'the reconcile journal was not removed: the next coordinator would run this finished reconcile again (harmless: nothing left to move)',
      );
    }
  }

  async resume<T>(finish: (context: ReconcileContext, since: string) => Promise<T>): Promise<{ since: string; result: T } | undefined> {
    const entry = await this.#kv.get(JOURNAL_KEY);
    if (entry?.operation !== 'PUT') return undefined;
    try {
      const raw = EntrySchema.parse(parseJsonOrUndefined(entry.string()));
      const context = parseReconcileContext(raw.context, `${entry.bucket} ${JOURNAL_KEY}: context`);
      const since = `${raw.at} on host ${raw.host}`;
      return { since, result: await finish(context, since) };
    } catch (err) {
      const e = toThymosError(err);
      this.#logger.error(
        { code: e.code, err: e.message },
        'the interrupted reconcile could not be finished; its journal is set aside as journal.bad',
      );
      await this.#kv.put(`${JOURNAL_KEY}.bad`, entry.string()).catch(() => undefined);
      await this.#kv.delete(JOURNAL_KEY).catch(() => undefined);
      return undefined;
    }
  }
}
