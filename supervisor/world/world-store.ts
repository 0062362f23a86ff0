import { randomUUID } from 'node:crypto';

import type { NatsConnection } from '@nats-io/transport-node';
import { BoundQuery, expr, RecordId, type Surreal } from 'surrealdb';
import { type z } from 'zod';

import {
  checkWorldFilter,
  requireWorldTable,
  type WorldFilter,
  WorldFilterSchema,
  worldRowFieldsSchema,
  type WorldTables,
} from '../../shared/domain/index.js';
import { ErrorCode, parseInput, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  DEFAULT_FLEET_NAMES,
  type FleetNames,
  parseJsonOrUndefined,
  type WorldQuery,
  type WorldRow,
  type WorldSubscriptionInfo,
} from '../../shared/protocol/index.js';
import { type LiveMember, WorldLiveQueries } from './world-live-queries.js';
import { conditionOf, tableDefinition, toWorldRow } from './world-surql.js';

const SUBSCRIPTION_SCHEMA = `
DEFINE TABLE IF NOT EXISTS live_subscription SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS table ON live_subscription TYPE string;
DEFINE FIELD IF NOT EXISTS where ON live_subscription TYPE string;
DEFINE FIELD IF NOT EXISTS owner ON live_subscription TYPE string;
DEFINE FIELD IF NOT EXISTS key ON live_subscription TYPE option<string>;
DEFINE FIELD IF NOT EXISTS created_at ON live_subscription TYPE int;
`;

export interface WorldStoreOptions {
  db: Surreal;
  tables: WorldTables;
  nc: NatsConnection;
  /** The fleet's subjects (live queries are relayed on `<fleet>.world.live.<sub>`). @default the default fleet's */
  names?: FleetNames;
  leaseMs: number;
  maxSubscriptions: number;
  /** Most live subscriptions one owner runs at once, so one agent cannot take every one. */
  maxSubscriptionsPerOwner: number;
  logger: Logger;
}

interface Subscription extends LiveMember {
  owner: string;
  key: string | undefined;
  leaseUntil: number;
}

/**
 * The shared world: the tables the application declares in its Pkl schema (`worldTables`),
 * in the supervisor's database. Reads and writes are structured — table, id, declared fields,
 * conditions whose values are bound parameters — so nothing from the wire becomes SurrealQL.
 * Live subscriptions run `LIVE SELECT` — one per distinct table and conditions, shared by
 * every subscription that asks for the same — and relay each notification on
 * `<fleet>.world.live.<sub>`; they are kept in the database and started again when the
 * supervisor restarts, and end when unsubscribed, when their owner agent stops, or when
 * their lease is not renewed.
 */
export class WorldStore {
  readonly #o: WorldStoreOptions;
  readonly #names: FleetNames;
  readonly #subs = new Map<string, Subscription>();
  readonly #live: WorldLiveQueries;
  readonly #rowSchemas = new Map<string, { full: z.ZodType<Record<string, unknown>>; partial: z.ZodType<Record<string, unknown>> }>();
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(options: WorldStoreOptions) {
    this.#o = options;
    this.#names = options.names ?? DEFAULT_FLEET_NAMES;
    this.#live = new WorldLiveQueries({ ...options, names: this.#names });
    for (const [name, table] of Object.entries(options.tables)) {
      this.#rowSchemas.set(name, { full: worldRowFieldsSchema(table), partial: worldRowFieldsSchema(table, true) });
    }
  }

  /**
   * Defines the declared tables (names are checked identifiers from the domain schema,
   * never from the wire) and restarts the live subscriptions a previous supervisor kept.
   */
  static async open(options: WorldStoreOptions): Promise<WorldStore> {
    const store = new WorldStore(options);
    await store.#run(
      SUBSCRIPTION_SCHEMA +
        Object.entries(options.tables)
          .map(([name, table]) => tableDefinition(name, table))
          .join(''),
    );
    await store.#restoreSubscriptions();
    store.#sweeper = setInterval(() => store.#sweep(), Math.max(250, Math.floor(options.leaseMs / 4)));
    store.#sweeper.unref();
    return store;
  }

  /** The declared tables and their fields. */
  tables(): WorldTables {
    return this.#o.tables;
  }

  async get(tableName: string, id: string): Promise<WorldRow | null> {
    const table = requireWorldTable(this.#o.tables, tableName);
    const [rows] = await this.#run<[Array<Record<string, unknown>>]>('SELECT * FROM $rid', { rid: new RecordId(tableName, id) });
    const row = rows?.[0];
    return row ? toWorldRow(row, table) : null;
  }

  /** Writes the whole row: fields not given are removed. */
  async set(tableName: string, id: string, fields: Record<string, unknown>, by: string): Promise<WorldRow> {
    const table = requireWorldTable(this.#o.tables, tableName);
    const valid = this.#validate(tableName, fields, 'full');
    const [rows] = await this.#run<[Array<Record<string, unknown>>]>('UPSERT $rid CONTENT $row', {
      rid: new RecordId(tableName, id),
      row: { ...valid, updated_at: Date.now(), updated_by: by },
    });
    return toWorldRow(rows[0]!, table);
  }

  /** Changes the given fields of an existing row; NOT_FOUND when there is none. */
  async patch(tableName: string, id: string, fields: Record<string, unknown>, by: string): Promise<WorldRow> {
    const table = requireWorldTable(this.#o.tables, tableName);
    const valid = this.#validate(tableName, fields, 'partial');
    const [rows] = await this.#run<[Array<Record<string, unknown>>]>('UPDATE ONLY $rid MERGE $row', {
      rid: new RecordId(tableName, id),
      row: { ...valid, updated_at: Date.now(), updated_by: by },
    }).catch((err: unknown) => {
      if (/does not exist|not found/i.test((err as Error).message)) return [[]] as [Array<Record<string, unknown>>];
      throw err;
    });
    const row = Array.isArray(rows) ? rows[0] : rows;
    if (!row) throw new ThymosError(ErrorCode.NOT_FOUND, `${tableName} has no row ${JSON.stringify(id)} to patch (set creates rows)`);
    return toWorldRow(row, table);
  }

  /** Removes a row; false when there was none. */
  async delete(tableName: string, id: string): Promise<boolean> {
    requireWorldTable(this.#o.tables, tableName);
    const [rows] = await this.#run<[unknown[]]>('DELETE $rid RETURN BEFORE', { rid: new RecordId(tableName, id) });
    return (rows?.length ?? 0) > 0;
  }

  async query(q: WorldQuery): Promise<WorldRow[]> {
    const table = checkWorldFilter(this.#o.tables, q);
    const query = new BoundQuery('SELECT * FROM type::table($world_table)', { world_table: q.table });
    const condition = conditionOf(q);
    if (condition) query.append(new BoundQuery(' WHERE ')).append(expr(condition));
    if (q.order_by) {
      const field = q.order_by.field;
      if (field !== 'id' && field !== 'updated_at' && field !== 'updated_by' && !Object.hasOwn(table.fields, field)) {
        throw new ThymosError(ErrorCode.INVALID_INPUT, `order_by.field: table ${q.table} has no field ${JSON.stringify(field)}`, {
          location: { path: 'order_by.field' },
        });
      }
      // The field is one the domain declares (a checked identifier), not text from the wire.
      query.append(new BoundQuery(` ORDER BY \`${field}\` ${q.order_by.direction === 'desc' ? 'DESC' : 'ASC'}`));
    }
    query.append(new BoundQuery(' LIMIT $world_limit', { world_limit: q.limit }));
    const [rows] = await this.#run<[Array<Record<string, unknown>>]>(query.query, query.bindings);
    return (rows ?? []).map((r) => toWorldRow(r, table));
  }

  /**
   * Starts (or, for the same owner and key, replaces the filter of) a live subscription.
   * Notifications go to `<fleet>.world.live.<sub>` until it ends.
   */
  async subscribe(request: WorldFilter & { owner: string; key?: string | undefined }): Promise<WorldSubscriptionInfo> {
    checkWorldFilter(this.#o.tables, request);
    const filter: WorldFilter = { table: request.table, where: request.where };
    const existing =
      request.key === undefined ? undefined : [...this.#subs.values()].find((s) => s.owner === request.owner && s.key === request.key);
    if (!existing) this.#checkRoom(request.owner);
    const sub: Subscription = existing ?? {
      sub: randomUUID(),
      filter,
      owner: request.owner,
      key: request.key,
      leaseUntil: 0,
    };
    sub.leaseUntil = Date.now() + this.#o.leaseMs;
    if (existing) await this.#live.leave(existing);
    sub.filter = filter;
    await this.#run('UPSERT $rid CONTENT $row RETURN NONE', {
      rid: new RecordId('live_subscription', sub.sub),
      row: { table: filter.table, where: JSON.stringify(filter.where), owner: sub.owner, key: sub.key, created_at: Date.now() },
    });
    this.#subs.set(sub.sub, sub);
    await this.#live.join(sub);
    return { sub: sub.sub, subject: this.#names.worldLive(sub.sub), lease_ms: this.#o.leaseMs };
  }

  /** CAPACITY_EXCEEDED when the store, or `owner`, runs as many live subscriptions as it may. */
  #checkRoom(owner: string): void {
    const { maxSubscriptions: max, maxSubscriptionsPerOwner: perOwner } = this.#o;
    if (this.#subs.size >= max) {
      throw new ThymosError(
        ErrorCode.CAPACITY_EXCEEDED,
        `the world store already runs ${this.#subs.size} live subscriptions ([world] max_subscriptions = ${max})`,
      );
    }
    let owned = 0;
    for (const s of this.#subs.values()) if (s.owner === owner) owned += 1;
    if (owned >= perOwner) {
      throw new ThymosError(
        ErrorCode.CAPACITY_EXCEEDED,
        `${owner} already runs ${owned} live subscriptions ([world] max_subscriptions_per_owner = ${perOwner}); end one first`,
      );
    }
  }

  /**
   * Extends the lease of each known subscription; returns the ones that no longer exist. With
   * `owner`, only that owner's: another's counts as unknown (an agent renews its own).
   */
  renew(subs: readonly string[], owner?: string): { unknown: string[] } {
    const until = Date.now() + this.#o.leaseMs;
    const unknown: string[] = [];
    for (const id of subs) {
      const s = this.#subs.get(id);
      if (s && (owner === undefined || s.owner === owner)) s.leaseUntil = until;
      else unknown.push(id);
    }
    return { unknown };
  }

  /** Ends a subscription; false when there is none (with `owner`, none of that owner's: an agent ends its own only). */
  async unsubscribe(id: string, owner?: string): Promise<boolean> {
    const s = this.#subs.get(id);
    if (!s || (owner !== undefined && s.owner !== owner)) return false;
    await this.#end(s, 'unsubscribed');
    return true;
  }

  /** Ends every subscription of an owner (an agent that stopped). */
  async endOwner(owner: string): Promise<number> {
    const owned = [...this.#subs.values()].filter((s) => s.owner === owner);
    for (const s of owned) await this.#end(s, `${owner} stopped`);
    return owned.length;
  }

  /** Live subscriptions now running, for status and tests. */
  subscriptions(): Array<{ sub: string; owner: string; table: string; key: string | null }> {
    return [...this.#subs.values()].map((s) => ({ sub: s.sub, owner: s.owner, table: s.filter.table, key: s.key ?? null }));
  }

  /** How many `LIVE SELECT`s run: one per distinct table and conditions. */
  get liveQueries(): number {
    return this.#live.size;
  }

  /** Stops relaying; the subscriptions stay recorded so the next supervisor restarts them. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const s of this.#subs.values()) await this.#live.leave(s);
  }

  async #restoreSubscriptions(): Promise<void> {
    const [rows] = await this.#run<[Array<Record<string, unknown> & { id: RecordId }>]>('SELECT * FROM live_subscription');
    const until = Date.now() + this.#o.leaseMs;
    for (const row of rows ?? []) {
      const sub = String(row.id.id);
      const parsed = WorldFilterSchema.safeParse({ table: row.table, where: parseJsonOrUndefined(String(row.where)) });
      let valid = parsed.success;
      if (parsed.success) {
        try {
          checkWorldFilter(this.#o.tables, parsed.data);
        } catch {
          valid = false;
        }
      }
      if (!parsed.success || !valid) {
        // The domain changed under it (table or field gone): it cannot run any more.
        this.#o.logger.warn({ sub, table: row.table }, 'live subscription dropped: its filter no longer fits the world tables');
        await this.#run('DELETE $rid', { rid: row.id });
        continue;
      }
      const s: Subscription = {
        sub,
        filter: parsed.data,
        owner: String(row.owner),
        key: typeof row.key === 'string' ? row.key : undefined,
        leaseUntil: until,
      };
      this.#subs.set(sub, s);
      await this.#live.join(s);
    }
    if (this.#subs.size > 0) this.#o.logger.info({ subscriptions: this.#subs.size }, 'live subscriptions restarted');
  }

  async #end(s: Subscription, reason: string): Promise<void> {
    this.#subs.delete(s.sub);
    await this.#live.leave(s);
    await this.#run('DELETE $rid', { rid: new RecordId('live_subscription', s.sub) }).catch(() => undefined);
    this.#o.logger.debug({ sub: s.sub, owner: s.owner, reason }, 'live subscription ended');
  }

  #sweep(): void {
    const now = Date.now();
    for (const s of this.#subs.values()) {
      if (s.leaseUntil < now) void this.#end(s, 'lease expired');
    }
  }

  #validate(tableName: string, fields: Record<string, unknown>, kind: 'full' | 'partial'): Record<string, unknown> {
    return parseInput(this.#rowSchemas.get(tableName)![kind], fields, `${tableName} fields`, ['fields']);
  }

  async #run<T extends unknown[] = unknown[]>(query: string, bindings?: Record<string, unknown>): Promise<T> {
    if (this.#closed) throw new ThymosError(ErrorCode.DATABASE_ERROR, 'the world store is closed');
    try {
      return (await this.#o.db.query(query, bindings)) as T;
    } catch (err) {
      throw new ThymosError(ErrorCode.DATABASE_ERROR, `world store: ${(err as Error).message}`, { cause: err });
    }
  }
}
