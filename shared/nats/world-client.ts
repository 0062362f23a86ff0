import { randomBytes } from 'node:crypto';

import type { NatsConnection, Subscription } from '@nats-io/transport-node';

import { type WorldFilter, type WorldFilterInput, WorldFilterSchema, type WorldTables } from '../domain/world-schema.js';
import { parseInput } from '../errors/zod-issues.js';
import { DEFAULT_FLEET_NAMES, type FleetNames } from '../protocol/fleet-names.js';
import { parseJsonOrUndefined } from '../protocol/parse-json.js';
import {
  type WorldChange,
  WorldChangeSchema,
  type WorldQueryInput,
  WorldQuerySchema,
  type WorldResultSchemas,
  type WorldRow,
} from '../protocol/world-protocol.js';
import { SupervisorRequester } from './supervisor-requester.js';

/** A running live subscription; `close()` ends it. */
export interface WorldSubscription {
  /** The current subscription id (it changes if the supervisor lost it and it was made again). */
  readonly sub: string;
  readonly filter: WorldFilter;
  close(): Promise<void>;
}

export interface WorldClientOptions {
  /** How long a request waits for the supervisor. */
  timeoutMs: number;
  /** Recorded as `updated_by` on writes: `app` or the writing agent's id. */
  by: string;
  /** Owner of live subscriptions: an agent id (they end when it stops) or `app:<name>`. */
  owner: string;
  /** The fleet's subjects. @default the default fleet's (`thymos.world.<op>`) */
  names?: FleetNames | undefined;
  /**
   * The agent this client speaks for: its requests go on that agent's own subjects
   * (`<fleet>.agent.<id>.world.<op>`), and the supervisor then accepts only `by` and `owner`
   * equal to the id. Unset for a game loop, a script or the CLI (`<fleet>.world.<op>`).
   */
  agent?: string | undefined;
  /** Under placement by lease, the claim the agent runs under now, named in each of its writes (the store refuses any other). */
  token?: (() => number | undefined) | undefined;
}

interface Live {
  sub: string;
  filter: WorldFilter;
  key: string | undefined;
  onChange: (change: WorldChange) => void;
  nats: Subscription;
  closed: boolean;
}

/**
 * The shared world as a game loop, the CLI or an agent sees it: structured reads and writes
 * of the tables the domain declares, and live subscriptions — all through the supervisor on
 * NATS (`<fleet>.world.<op>`), never SurrealQL. Subscriptions are renewed while this client
 * lives and made again if the supervisor no longer knows them.
 */
export class WorldClient {
  readonly #nc: NatsConnection;
  readonly #requester: SupervisorRequester<typeof WorldResultSchemas>;
  readonly #options: WorldClientOptions;
  readonly #lives = new Set<Live>();
  #renewer: NodeJS.Timeout | undefined;
  #renewEveryMs = 0;

  constructor(nc: NatsConnection, options: WorldClientOptions) {
    this.#nc = nc;
    this.#options = options;
    this.#requester = SupervisorRequester.world(nc, options.timeoutMs, options.names ?? DEFAULT_FLEET_NAMES, options.agent);
  }

  /** `{ token }` when this client writes under a claim. */
  #claim(): { token?: number } {
    const token = this.#options.token?.();
    return token === undefined ? {} : { token };
  }

  /** A fresh owner name for a game loop or script: `app:<random>`, never an agent id. */
  static appOwner(): string {
    return `app:${randomBytes(6).toString('hex')}`;
  }

  /** The declared tables and their fields. */
  tables(): Promise<WorldTables> {
    return this.#requester.request('tables');
  }

  /** One row, or null when there is none. */
  get(table: string, id: string): Promise<WorldRow | null> {
    return this.#requester.request('get', { table, id });
  }

  /** Writes the whole row (creating it); fields not given are removed. */
  set(table: string, id: string, fields: Record<string, unknown>): Promise<WorldRow> {
    return this.#requester.request('set', { table, id, fields, by: this.#options.by, ...this.#claim() });
  }

  /** Changes some fields of an existing row; NOT_FOUND when there is none. */
  patch(table: string, id: string, fields: Record<string, unknown>): Promise<WorldRow> {
    return this.#requester.request('patch', { table, id, fields, by: this.#options.by, ...this.#claim() });
  }

  async delete(table: string, id: string): Promise<boolean> {
    return (await this.#requester.request('delete', { table, id, ...this.#claim() })).deleted;
  }

  /**
   * Rows of one table where every condition holds.
   * @example world.query({ table: 'quest', where: [{ field: 'status', value: 'open' }], order_by: { field: 'reward', direction: 'desc' }, limit: 10 })
   */
  async query(query: WorldQueryInput): Promise<WorldRow[]> {
    return this.#requester.request('query', parseInput(WorldQuerySchema, query, 'world query'));
  }

  /**
   * Calls `onChange` for every insert, update and delete in `filter.table` that matches
   * `filter.where`, until `close()`. With a `key`, subscribing again replaces the filter
   * instead of adding a subscription. A row updated so that it no longer matches sends nothing.
   */
  async subscribe(
    filter: WorldFilterInput,
    onChange: (change: WorldChange) => void,
    options: { key?: string } = {},
  ): Promise<WorldSubscription> {
    const valid = parseInput(WorldFilterSchema, filter, 'world subscription');
    const live: Live = { sub: '', filter: valid, key: options.key, onChange, nats: undefined as unknown as Subscription, closed: false };
    await this.#open(live);
    this.#lives.add(live);
    return {
      get sub() {
        return live.sub;
      },
      filter: valid,
      close: () => this.#closeLive(live),
    };
  }

  /** Ends every subscription of this client. */
  async close(): Promise<void> {
    clearInterval(this.#renewer);
    this.#renewer = undefined;
    await Promise.all([...this.#lives].map((l) => this.#closeLive(l)));
  }

  async #open(live: Live): Promise<void> {
    const info = await this.#requester.request('subscribe', {
      ...live.filter,
      owner: this.#options.owner,
      ...(live.key ? { key: live.key } : {}),
    });
    if (live.sub !== info.sub) {
      live.nats?.unsubscribe();
      live.sub = info.sub;
      live.nats = this.#nc.subscribe(info.subject, {
        callback: (_err, msg) => {
          // The supervisor publishes changes with no reply: one with a reply was sent some other way (a JetStream delivery aimed here).
          if (msg.reply) return;
          const change = WorldChangeSchema.safeParse(parseJsonOrUndefined(msg.string()));
          if (change.success && !live.closed) live.onChange(change.data);
        },
      });
      await this.#nc.flush();
    }
    this.#scheduleRenew(info.lease_ms);
  }

  async #closeLive(live: Live): Promise<void> {
    if (live.closed) return;
    live.closed = true;
    this.#lives.delete(live);
    live.nats?.unsubscribe();
    if (this.#lives.size === 0) {
      clearInterval(this.#renewer);
      this.#renewer = undefined;
    }
    await this.#requester
      .request('unsubscribe', { sub: live.sub }, { timeoutMs: Math.min(this.#options.timeoutMs, 5000) })
      .catch(() => undefined);
  }

  #scheduleRenew(leaseMs: number): void {
    const every = Math.max(200, Math.floor(leaseMs / 3));
    if (this.#renewer && every === this.#renewEveryMs) return;
    clearInterval(this.#renewer);
    this.#renewEveryMs = every;
    this.#renewer = setInterval(() => void this.#renew(), every);
    this.#renewer.unref();
  }

  async #renew(): Promise<void> {
    const lives = [...this.#lives];
    if (lives.length === 0) return;
    try {
      const { unknown } = await this.#requester.request('renew', { subs: lives.map((l) => l.sub) }, { timeoutMs: this.#renewEveryMs });
      const lost = new Set(unknown);
      for (const l of lives) if (lost.has(l.sub) && !l.closed) await this.#open(l);
    } catch {
      // The supervisor is away (restarting): its successor restarts the subscriptions it kept.
    }
  }
}
