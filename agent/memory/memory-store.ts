import { RecordId, type Surreal } from 'surrealdb';

import { openEmbeddedSurreal } from '../../shared/engines/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { CallStatus, ToolCallRecord } from '../../shared/protocol/index.js';
import { CONCEPT_GRAPH_QUERY, type ConceptGraph, conceptGraphOf, type ConceptGraphRows } from './concept-graph-rows.js';
import type { MemoryRecord } from './memory-record.js';
import {
  aliasBindings,
  type AliasRow,
  callBinding,
  conceptBindings,
  type ConceptRecord,
  conceptRow,
  fromRow,
  type MemoryRow,
  type MemoryWrite,
  type StoredChanges,
  type StoredVector,
  storedVector,
  vectorBytes,
  writeBindings,
  type WrittenWith,
} from './memory-rows.js';
import { MEMORY_SCHEMA } from './memory-schema.js';
import { QueryRunner } from './query-runner.js';
import { WriteBehind } from './write-behind.js';

export type { AliasRow, ConceptRecord, ConceptWrite, WrittenWith } from './memory-rows.js';

/** What an agent notes of a job message it was handed (see `JobDeliveries`). */
export interface DeliveryNote {
  /** How many of the message's deliveries, from the first, came to this agent one after another. */
  here: number;
  /** The message's time in its stream: a stream made again numbers its messages anew. */
  stamp: string;
  /** When the note was last written (ms since the epoch). */
  at: number;
}

/** A saved agent state, newest first when listed. */
export interface SnapshotRecord {
  at: number;
  reason: string;
  state: Record<string, unknown>;
}

/**
 * The agent's private SurrealDB (surrealkv file). Durable truth: every write is
 * awaited before it is acknowledged to a caller.
 */
export class MemoryStore {
  readonly #db: QueryRunner;
  /** Set when close begins: what waits is being written, and nothing more is queued. */
  #closing = false;
  readonly #later = new WriteBehind<MemoryWrite>((writes) => this.#writeNow(writes), {
    maxItems: 256,
    onError: (err, n) => this.#reportLate?.(err, n),
  });
  #reportLate: ((err: unknown, writes: number) => void) | undefined;

  private constructor(db: Surreal) {
    this.#db = new QueryRunner(db);
  }

  /**
   * Opens (creating if needed) the database at `dir`. Fails with DATABASE_ERROR
   * rather than hanging if it cannot open within `timeoutMs`.
   */
  static async open(dir: string, options: { timeoutMs: number }): Promise<MemoryStore> {
    return new MemoryStore(
      await openEmbeddedSurreal(dir, { namespace: 'thymos', database: 'agent', schema: MEMORY_SCHEMA, timeoutMs: options.timeoutMs }),
    );
  }

  async insert(records: readonly MemoryRecord[]): Promise<void> {
    await this.apply(records, []);
  }

  /**
   * Inserts memories and changes the lineage or importance of stored ones, in one
   * transaction: a consolidation is stored whole or not at all. `withNew` adds what was ready
   * for the new memories at once (their vectors, the concepts they mention) to that same
   * transaction, so a heard event costs one write instead of three.
   */
  async apply(
    records: readonly MemoryRecord[],
    changes: ReadonlyArray<{ id: string; changes: StoredChanges }>,
    withNew: WrittenWith = {},
  ): Promise<void> {
    if (records.length === 0 && changes.length === 0) return;
    await this.#later.flush();
    await this.#writeNow([{ records, changes, withNew }]);
  }

  /**
   * New memories written within `delayMs`, with those of other `applySoon` calls made meanwhile,
   * in one transaction (up to 256 calls): resolves once they are stored. A write that fails is
   * tried again until it succeeds or the store closes; a closed store throws at once. Every
   * other query of the store first writes what waits, so reads see it and later writes land
   * after it.
   */
  applySoon(records: readonly MemoryRecord[], withNew: WrittenWith, delayMs: number): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.#later.add({ records, changes: [], withNew }, delayMs);
  }

  /** Resolves once every `applySoon` so far is stored. */
  stored(): Promise<void> {
    return this.#later.settled();
  }

  /** Writes what `applySoon` left waiting now. */
  async writePending(): Promise<void> {
    await this.#later.flush();
  }

  /** Called when a write of `applySoon` failed (it is tried again). */
  onLateWriteError(report: (err: unknown, writes: number) => void): void {
    this.#reportLate = report;
  }

  async #writeNow(writes: readonly MemoryWrite[]): Promise<void> {
    const { rows, updates, concepts, mentions, aliases, calls } = writeBindings(writes);
    if (updates.length === 0 && concepts.length === 0 && mentions.length === 0 && aliases.length === 0 && calls.length === 0) {
      await this.#db.query('INSERT INTO memory $rows RETURN NONE', { rows });
      return;
    }
    // Aliases only when a text gave some: the common write parses no statement for them.
    const saveAliases = aliases.length > 0 ? ' FOR $a IN $aliases { UPSERT $a.id CONTENT $a.row RETURN NONE; };' : '';
    // Calls' records in order: a call saved twice in one write ends as its later record.
    const saveCalls = calls.length > 0 ? ' FOR $k IN $calls { UPSERT $k.id CONTENT $k.row RETURN NONE; };' : '';
    await this.#db.query(
      `BEGIN TRANSACTION; IF array::len($rows) > 0 { INSERT INTO memory $rows RETURN NONE; }; FOR $u IN $updates { UPDATE $u.id MERGE $u.set RETURN NONE; }; FOR $c IN $concepts { UPSERT $c.id CONTENT $c.row RETURN NONE; }; IF array::len($mentions) > 0 { INSERT RELATION INTO mentions $mentions RETURN NONE; };${saveAliases}${saveCalls} COMMIT TRANSACTION;`,
      { rows, updates, concepts, mentions, ...(aliases.length > 0 ? { aliases } : {}), ...(calls.length > 0 ? { calls } : {}) },
    );
  }

  /** Ids of the memories whose concepts were never extracted (written before concepts were on, or lost to a crash). */
  async withoutConcepts(): Promise<string[]> {
    const [rows] = await this.#run<[Array<{ id: RecordId }>]>('SELECT id FROM memory WHERE concepts_at = NONE');
    return (rows ?? []).map((r) => String(r.id.id));
  }

  /** The stored vectors made by `model`, by memory id. */
  async embeddings(model: string): Promise<Map<string, Float32Array>> {
    const [rows] = await this.#run<[Array<{ id: RecordId; embedding: StoredVector }>]>(
      'SELECT id, embedding FROM memory WHERE embedding_model = $model',
      { model },
    );
    return new Map((rows ?? []).map((r) => [String(r.id.id), storedVector(r.embedding)]));
  }

  /** Stores vectors made by `model` for existing memories. */
  async setEmbeddings(model: string, vectors: ReadonlyMap<string, Float32Array>): Promise<void> {
    if (vectors.size === 0) return;
    await this.#run('FOR $e IN $entries { UPDATE $e.id SET embedding = $e.embedding, embedding_model = $model RETURN NONE; }', {
      model,
      entries: [...vectors].map(([id, v]) => ({ id: new RecordId('memory', id), embedding: vectorBytes(v) })),
    });
  }

  async all(): Promise<MemoryRecord[]> {
    const [rows] = await this.#run<[MemoryRow[]]>('SELECT * OMIT embedding, concepts_at FROM memory');
    return (rows ?? []).map(fromRow);
  }

  async count(): Promise<number> {
    const [rows] = await this.#run<[Array<{ n: number }>]>('SELECT count() AS n FROM memory GROUP ALL');
    return rows?.[0]?.n ?? 0;
  }

  /**
   * Stores how often and when memories were last recalled (their counts and times as they are
   * now, so writes that wait may be merged and a retry writes nothing twice): within `delayMs`
   * with whatever else waits (see `applySoon`), or at once when it is 0. Throws at once when
   * the store is closed.
   */
  reinforce(records: ReadonlyArray<Pick<MemoryRecord, 'id' | 'access_count' | 'last_accessed'>>, delayMs: number): Promise<void> {
    if (this.#closing) throw new ThymosError(ErrorCode.DATABASE_ERROR, 'the memory database is closed');
    const changes = records.map(({ id, access_count, last_accessed }) => ({ id, changes: { access_count, last_accessed } }));
    if (changes.length === 0) return Promise.resolve();
    return delayMs > 0 ? this.#later.add({ records: [], changes, withNew: {} }, delayMs) : this.apply([], changes);
  }

  /** Writes concepts (whole records, by key) and the memory → concept mentions, in one request. */
  async saveConcepts(
    concepts: readonly ConceptRecord[],
    mentions: ReadonlyArray<{ memory: string; concept: string }>,
    extracted: readonly string[] = [],
    at = Date.now(),
    aliases: readonly AliasRow[] = [],
  ): Promise<void> {
    if (concepts.length === 0 && mentions.length === 0 && extracted.length === 0 && aliases.length === 0) return;
    await this.#run(
      'BEGIN TRANSACTION; FOR $c IN $concepts { UPSERT $c.id CONTENT $c.row RETURN NONE; }; IF array::len($mentions) > 0 { INSERT RELATION INTO mentions $mentions RETURN NONE; }; IF array::len($extracted) > 0 { UPDATE $extracted SET concepts_at = $at RETURN NONE; }; FOR $a IN $aliases { UPSERT $a.id CONTENT $a.row RETURN NONE; }; COMMIT TRANSACTION;',
      {
        ...conceptBindings(concepts, mentions),
        extracted: extracted.map((id) => new RecordId('memory', id)),
        at,
        aliases: aliasBindings(aliases),
      },
    );
  }

  /** Records aliases (idempotent: one record per alias text). */
  async saveAliases(aliases: readonly AliasRow[]): Promise<void> {
    if (aliases.length === 0) return;
    await this.#run('FOR $a IN $aliases { UPSERT $a.id CONTENT $a.row RETURN NONE; }', { aliases: aliasBindings(aliases) });
  }

  /** Everything the concept tracker keeps: concepts, aliases, mentions, relationships and causes, in one request. */
  async conceptGraph(): Promise<ConceptGraph> {
    return conceptGraphOf(await this.#run<ConceptGraphRows>(CONCEPT_GRAPH_QUERY));
  }

  /**
   * Writes typed edges between concepts (both concepts are created as `mentioned` if new) and
   * causal links between memories, in one request. Properties are stored as JSON text.
   */
  async saveLinks(
    relations: ReadonlyArray<{ from: ConceptRecord; to: ConceptRecord; type: string; properties: Record<string, unknown>; at: number }>,
    causes: ReadonlyArray<{ effect: string; cause: string; reason: string; at: number }>,
  ): Promise<void> {
    const concepts = new Map<string, ConceptRecord>();
    for (const r of relations) for (const c of [r.from, r.to]) concepts.set(c.key, c);
    await this.#run(
      'FOR $c IN $concepts { UPSERT $c.id MERGE $c.row RETURN NONE; }; IF array::len($relations) > 0 { INSERT RELATION INTO relates $relations RETURN NONE; }; IF array::len($causes) > 0 { INSERT RELATION INTO caused_by $causes RETURN NONE; };',
      {
        concepts: [...concepts.values()].map(conceptRow),
        relations: relations.map((r) => ({
          in: new RecordId('concept', r.from.key),
          out: new RecordId('concept', r.to.key),
          type: r.type,
          properties: JSON.stringify(r.properties),
          at: r.at,
        })),
        causes: causes.map((c) => ({
          in: new RecordId('memory', c.effect),
          out: new RecordId('memory', c.cause),
          reason: c.reason,
          at: c.at,
        })),
      },
    );
  }

  async saveSnapshot(snapshot: SnapshotRecord): Promise<void> {
    await this.#run('CREATE snapshot CONTENT $s RETURN NONE', {
      s: { at: snapshot.at, reason: snapshot.reason, state: JSON.stringify(snapshot.state) },
    });
  }

  async latestSnapshot(): Promise<SnapshotRecord | undefined> {
    const [rows] = await this.#run<[Array<{ at: number; reason: string; state: string }>]>(
      'SELECT at, reason, state FROM snapshot ORDER BY at DESC LIMIT 1',
    );
    const row = rows?.[0];
    return row ? { at: row.at, reason: row.reason, state: JSON.parse(row.state) as Record<string, unknown> } : undefined;
  }

  async getMeta<T>(key: string): Promise<T | undefined> {
    const [rows] = await this.#run<[Array<{ data: T }>]>('SELECT data FROM $id', { id: new RecordId('meta', key) });
    return rows?.[0]?.data;
  }

  async setMeta(key: string, value: unknown): Promise<void> {
    await this.#run('UPSERT $id CONTENT { data: $data } RETURN NONE', { id: new RecordId('meta', key), data: value });
  }

  /** Saves a tool call's record under its id (again as it moves on: running, then ok or failed). */
  async saveCall(record: ToolCallRecord): Promise<void> {
    const { id, row } = callBinding(record);
    await this.#run('UPSERT $id CONTENT $row RETURN NONE', { id, row });
  }

  /**
   * Saves a tool call's record within `delayMs`, in one write with the memories and other
   * records that wait (see `applySoon`); resolves once it is stored. Every read of the store
   * writes what waits first, so `getCall` finds it at once. A crash before the write loses it.
   */
  saveCallSoon(record: ToolCallRecord, delayMs: number): Promise<void> {
    if (this.#closing) throw new ThymosError(ErrorCode.DATABASE_ERROR, 'the memory database is closed');
    // Made into its row now, not when written: a record that cannot be (a cycle in a tool's error details) throws here, to this call alone, rather than stopping every write after it; and a result its tool changes later is stored as answered.
    return this.#later.add({ records: [], changes: [], withNew: {}, calls: [callBinding(record)] }, delayMs);
  }

  /**
   * The latest call of `tool` that ran (or waited for approval) under idempotency key `key`.
   * Looked up by record id: an index on tool_call would keep surrealkv's lock after close.
   */
  async callWithKey(tool: string, key: string): Promise<ToolCallRecord | undefined> {
    const [rows] = await this.#run<[Array<{ call: string }>]>('SELECT call FROM $id', { id: new RecordId('call_key', [tool, key]) });
    return rows?.[0] ? this.getCall(rows[0].call) : undefined;
  }

  /** Makes `callId` the latest call of `tool` under `key`. */
  async claimKey(tool: string, key: string, callId: string): Promise<void> {
    await this.#run('UPSERT $id CONTENT { call: $call } RETURN NONE', { id: new RecordId('call_key', [tool, key]), call: callId });
  }

  /** The note of the job message at `seq` of `stream` (see `JobDeliveries`), if one was kept. */
  async deliveryNote(stream: string, seq: number): Promise<DeliveryNote | undefined> {
    const [rows] = await this.#run<[DeliveryNote[]]>('SELECT here, stamp, at FROM $id', {
      id: new RecordId('job_delivery', [stream, seq]),
    });
    return rows?.[0];
  }

  /** Keeps the note of the job message at `seq` of `stream`, in place of the one before. */
  async noteDelivery(stream: string, seq: number, note: DeliveryNote): Promise<void> {
    await this.#run('UPSERT $id CONTENT $note RETURN NONE', { id: new RecordId('job_delivery', [stream, seq]), note });
  }

  /** Forgets the note of the job message at `seq` of `stream`; forgotten already, nothing happens. */
  async forgetDelivery(stream: string, seq: number): Promise<void> {
    await this.#run('DELETE $id RETURN NONE', { id: new RecordId('job_delivery', [stream, seq]) });
  }

  /** Forgets the notes of job deliveries taken before `at` (ms since the epoch). */
  async forgetDeliveriesBefore(at: number): Promise<void> {
    await this.#run('DELETE job_delivery WHERE at < $at RETURN NONE', { at });
  }

  async getCall(id: string): Promise<ToolCallRecord | undefined> {
    const [rows] = await this.#run<[Array<{ record: string }>]>('SELECT record FROM $id', { id: new RecordId('tool_call', id) });
    return rows?.[0] ? (JSON.parse(rows[0].record) as ToolCallRecord) : undefined;
  }

  async callsWithStatus(status: CallStatus): Promise<ToolCallRecord[]> {
    const [rows] = await this.#run<[Array<{ record: string }>]>('SELECT record FROM tool_call WHERE status = $status', { status });
    return (rows ?? []).map((r) => JSON.parse(r.record) as ToolCallRecord);
  }

  /** Writes what `applySoon` left waiting, refuses new queries, waits for those in flight (a background hook's, say), then closes the database. */
  async close(): Promise<void> {
    if (this.#db.closed) return;
    this.#closing = true;
    await this.#later.close();
    await this.#db.close();
  }

  /** Runs a query once what `applySoon` left waiting is written (see `QueryRunner.query`). */
  async #run<T extends unknown[] = unknown[]>(query: string, bindings?: Record<string, unknown>): Promise<T> {
    if (this.#later.size > 0) await this.#later.flush();
    return this.#db.query<T>(query, bindings);
  }
}
