import type { NatsConnection } from '@nats-io/transport-node';
import { type LiveMessage, type LiveSubscription, type Surreal, Table } from 'surrealdb';

import type { WorldFilter, WorldTables } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { FleetNames, WorldChange } from '../../shared/protocol/index.js';
import { conditionOf, toWorldRow } from './world-surql.js';

/** A subscription as a live query sees it: where its notifications go, and what it asks for. */
export interface LiveMember {
  readonly sub: string;
  filter: WorldFilter;
}

/** One `LIVE SELECT` shared by every subscription with the same table and conditions. */
interface LiveGroup {
  key: string;
  table: string;
  live: LiveSubscription;
  stopRelay: () => void;
  members: Set<LiveMember>;
}

export interface WorldLiveQueriesOptions {
  db: Surreal;
  tables: WorldTables;
  nc: NatsConnection;
  names: FleetNames;
  logger: Logger;
}

/**
 * The world store's `LIVE SELECT`s: one per distinct table and conditions, shared by every
 * subscription that asks for the same, each notification relayed on `<fleet>.world.live.<sub>`
 * of every member.
 */
export class WorldLiveQueries {
  readonly #o: WorldLiveQueriesOptions;
  readonly #groups = new Map<string, LiveGroup>();
  readonly #groupOf = new Map<LiveMember, LiveGroup>();

  constructor(options: WorldLiveQueriesOptions) {
    this.#o = options;
  }

  /** How many `LIVE SELECT`s run. */
  get size(): number {
    return this.#groups.size;
  }

  /** Joins the live query of its filter, starting it when it is the first with that filter. */
  async join(s: LiveMember): Promise<void> {
    const key = JSON.stringify([s.filter.table, s.filter.where]);
    let group = this.#groups.get(key);
    if (!group) {
      const condition = conditionOf(s.filter);
      let pending = this.#o.db.live(new Table(s.filter.table));
      if (condition) pending = pending.where(condition);
      const live = await pending.catch((err: unknown) => {
        throw new ThymosError(ErrorCode.DATABASE_ERROR, `live query on ${s.filter.table}: ${(err as Error).message}`, { cause: err });
      });
      const created: LiveGroup = { key, table: s.filter.table, live, stopRelay: () => undefined, members: new Set() };
      created.stopRelay = live.subscribe((m) => this.#relay(created, m));
      // Another request for the same filter may have finished first: keep one live query.
      const raced = this.#groups.get(key);
      if (raced) {
        created.stopRelay();
        await live.kill().catch(() => undefined);
        group = raced;
      } else {
        this.#groups.set(key, created);
        group = created;
      }
    }
    group.members.add(s);
    this.#groupOf.set(s, group);
  }

  /** Leaves its live query, killing it when it was the last member. */
  async leave(s: LiveMember): Promise<void> {
    const group = this.#groupOf.get(s);
    this.#groupOf.delete(s);
    if (!group) return;
    group.members.delete(s);
    if (group.members.size > 0 || this.#groups.get(group.key) !== group) return;
    this.#groups.delete(group.key);
    group.stopRelay();
    await group.live.kill().catch(() => undefined);
  }

  /** Sends one notification to the subject of every subscription of the group. */
  #relay(group: LiveGroup, m: LiveMessage): void {
    if (m.action === 'KILLED') return;
    const base = {
      action: m.action === 'CREATE' ? ('create' as const) : m.action === 'UPDATE' ? ('update' as const) : ('delete' as const),
      table: group.table,
      id: String(m.recordId.id),
      row: toWorldRow(m.value, this.#o.tables[group.table]!),
      at: Date.now(),
    };
    for (const s of group.members) {
      const change: WorldChange = { sub: s.sub, ...base };
      try {
        this.#o.nc.publish(this.#o.names.worldLive(s.sub), JSON.stringify(change));
      } catch (err) {
        this.#o.logger.warn({ err: (err as Error).message, sub: s.sub }, 'live notification not relayed');
      }
    }
  }
}
