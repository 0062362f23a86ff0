import { RecordId, type Surreal } from 'surrealdb';
import { z } from 'zod';

import { type LifecycleState, LifecycleStateSchema } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { type AgentMode, type AgentStatusRow, type TransitionRecord, TransitionRecordSchema } from '../../shared/protocol/index.js';
import type { ProcessInfo } from '../pm2/process-manager.js';

const SCHEMA = `
DEFINE TABLE IF NOT EXISTS agent SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS state ON agent TYPE string ASSERT $value IN ['active', 'listening', 'dormant', 'archived'];
DEFINE FIELD IF NOT EXISTS mode ON agent TYPE option<string>;
DEFINE FIELD IF NOT EXISTS pid ON agent TYPE option<int>;
DEFINE FIELD IF NOT EXISTS port ON agent TYPE option<int>;
DEFINE FIELD IF NOT EXISTS score ON agent TYPE option<number>;
DEFINE FIELD IF NOT EXISTS source ON agent TYPE option<string>;
DEFINE FIELD IF NOT EXISTS since ON agent TYPE int;
DEFINE FIELD IF NOT EXISTS last_error ON agent TYPE option<object> FLEXIBLE;
DEFINE TABLE IF NOT EXISTS transition SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS agent ON transition TYPE string;
DEFINE FIELD IF NOT EXISTS at ON transition TYPE int;
DEFINE FIELD IF NOT EXISTS from ON transition TYPE string;
DEFINE FIELD IF NOT EXISTS to ON transition TYPE string;
DEFINE FIELD IF NOT EXISTS score ON transition TYPE option<number>;
DEFINE FIELD IF NOT EXISTS reason ON transition TYPE string;
DEFINE FIELD IF NOT EXISTS ok ON transition TYPE bool;
DEFINE FIELD IF NOT EXISTS error ON transition TYPE option<string>;
`;

const orNull = <T extends z.ZodType>(t: T) => t.nullish().transform((v) => v ?? null);
const StoredEntrySchema = z.object({
  state: LifecycleStateSchema,
  mode: orNull(z.enum(['active', 'passive'])),
  pid: orNull(z.number().int()),
  port: orNull(z.number().int()),
  score: orNull(z.number()),
  source: orNull(z.string()),
  since: z.number().int(),
  last_error: orNull(z.object({ code: z.string(), message: z.string() })),
});

/** The registry's record of one agent. */
export interface AgentEntry {
  readonly id: string;
  state: LifecycleState;
  mode: AgentMode | null;
  pid: number | null;
  port: number | null;
  score: number | null;
  source: string | null;
  /** When it entered `state`, ms since the epoch. */
  since: number;
  last_error: { code: string; message: string } | null;
}

/**
 * The fleet's registry in the world SurrealDB: every agent with its state, mode, pid,
 * port, last score, since, and an append-only transition history. Kept in memory for
 * decisions and written through on every change, so a restarted supervisor finds it whole.
 */
export class AgentRegistry {
  readonly #db: Surreal;
  readonly #entries = new Map<string, AgentEntry>();
  #closed = false;

  private constructor(db: Surreal) {
    this.#db = db;
  }

  /** Loads the registry from the world database (defining its tables the first time). */
  static async open(db: Surreal): Promise<AgentRegistry> {
    const registry = new AgentRegistry(db);
    await registry.#run(SCHEMA);
    await registry.#load();
    return registry;
  }

  async #load(): Promise<void> {
    const [rows] = await this.#run<[Array<Record<string, unknown> & { id: RecordId }>]>('SELECT * FROM agent');
    for (const row of rows ?? []) {
      const id = String(row.id.id);
      const parsed = StoredEntrySchema.safeParse(row);
      if (!parsed.success)
        throw new ThymosError(ErrorCode.DATABASE_ERROR, `registry row agent:${id} is malformed: ${parsed.error.message}`);
      this.#entries.set(id, { id, ...parsed.data });
    }
  }

  /** Registers agents not yet known as Dormant (never started). Returns the ids added. */
  async ensure(ids: Iterable<string>, now = Date.now()): Promise<string[]> {
    const added: AgentEntry[] = [];
    for (const id of ids) {
      if (this.#entries.has(id)) continue;
      added.push({ id, state: 'dormant', mode: null, pid: null, port: null, score: null, source: null, since: now, last_error: null });
    }
    if (added.length === 0) return [];
    await this.#run('INSERT INTO agent $rows RETURN NONE', { rows: added.map((e) => ({ id: new RecordId('agent', e.id), ...toRow(e) })) });
    for (const e of added) this.#entries.set(e.id, e);
    return added.map((e) => e.id);
  }

  get(id: string): AgentEntry | undefined {
    return this.#entries.get(id);
  }

  all(): AgentEntry[] {
    return [...this.#entries.values()];
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Writes a change through to the database, then applies it in memory. */
  async update(id: string, patch: Partial<Omit<AgentEntry, 'id'>>): Promise<AgentEntry> {
    const entry = this.#entries.get(id);
    if (!entry) throw new ThymosError(ErrorCode.AGENT_NOT_FOUND, `agent ${id} is not in the registry`);
    const next: AgentEntry = { ...entry, ...patch };
    await this.#run('UPSERT $rid CONTENT $row RETURN NONE', { rid: new RecordId('agent', id), row: toRow(next) });
    this.#entries.set(id, next);
    return next;
  }

  /**
   * Records the latest score of many agents in one statement (a reconcile rescoring a large
   * fleet must not pay one write per agent). Unknown ids are ignored.
   */
  async updateScores(scores: ReadonlyArray<{ id: string; score: number; source: string }>): Promise<void> {
    const known = scores.filter((s) => this.#entries.has(s.id));
    if (known.length === 0) return;
    await this.#run('FOR $s IN $scores { UPDATE $s.rid SET score = $s.score, source = $s.source RETURN NONE; }', {
      scores: known.map((s) => ({ rid: new RecordId('agent', s.id), score: s.score, source: s.source })),
    });
    for (const s of known) {
      const e = this.#entries.get(s.id)!;
      this.#entries.set(s.id, { ...e, score: s.score, source: s.source });
    }
  }

  async recordTransition(t: TransitionRecord): Promise<void> {
    await this.#run('CREATE transition CONTENT $t RETURN NONE', {
      t: {
        agent: t.id,
        at: Date.parse(t.at),
        from: t.from,
        to: t.to,
        score: t.score ?? undefined,
        reason: t.reason,
        ok: t.ok,
        error: t.error ?? undefined,
      },
    });
  }

  /** The newest transitions of one agent, newest first. */
  async history(id: string, limit: number): Promise<TransitionRecord[]> {
    const [rows] = await this.#run<[Array<Record<string, unknown>>]>(
      'SELECT * FROM transition WHERE agent = $id ORDER BY at DESC LIMIT $limit',
      { id, limit },
    );
    return (rows ?? []).map((r) =>
      TransitionRecordSchema.parse({
        id: r.agent,
        at: new Date(r.at as number).toISOString(),
        from: r.from,
        to: r.to,
        score: r.score ?? null,
        reason: r.reason,
        ok: r.ok,
        error: r.error ?? null,
      }),
    );
  }

  /** Stops using the database (its owner closes it). */
  close(): void {
    this.#closed = true;
  }

  async #run<T extends unknown[] = unknown[]>(query: string, bindings?: Record<string, unknown>): Promise<T> {
    if (this.#closed) throw new ThymosError(ErrorCode.DATABASE_ERROR, 'the registry is closed');
    try {
      return (await this.#db.query(query, bindings)) as T;
    } catch (err) {
      throw new ThymosError(ErrorCode.DATABASE_ERROR, `registry: ${(err as Error).message}`, { cause: err });
    }
  }
}

function toRow({ id: _id, ...fields }: AgentEntry): Record<string, unknown> {
  // NONE (undefined) rather than NULL: option<T> fields take NONE.
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v ?? undefined]));
}

/** An agent as `thymos status` shows it: its registry entry, with what pm2 and its heartbeats say of its process. */
export function statusRow(
  e: AgentEntry,
  facts: { host: string; app: ProcessInfo | undefined; rss: number | undefined; pinned: LifecycleState | undefined; routed: number },
): AgentStatusRow {
  const running = e.state === 'active' || e.state === 'listening';
  return {
    id: e.id,
    host: facts.host,
    state: e.state,
    mode: running ? e.mode : null,
    pid: running ? (facts.app?.pid ?? e.pid) : null,
    port: running ? e.port : null,
    score: e.score,
    source: e.source,
    since: new Date(e.since).toISOString(),
    rss_bytes: running ? (facts.app?.memory ?? facts.rss ?? null) : null,
    restarts: facts.app?.restarts ?? 0,
    pinned: facts.pinned ?? null,
    last_error: e.last_error,
    events_routed: facts.routed,
  };
}
