import { RecordId } from 'surrealdb';

import type { ToolCallRecord } from '../../shared/protocol/index.js';
import { type MemoryChanges, type MemoryRecord, normaliseSource } from './memory-record.js';

/*
 * How memories, concepts and tool calls' records become SurrealDB rows and back: the conversions of the memory store
 * (memory-store.ts), which holds the queries.
 */

export interface MemoryRow extends Omit<MemoryRecord, 'id'> {
  id: RecordId;
}

/** A concept as stored: a person, place or thing the agent's memories mention. */
export interface ConceptRecord {
  /** Stable key: an agent id, an alias target, or the lower-cased name with _ for spaces. */
  key: string;
  name: string;
  type: string;
  /** mentioned → provisional → tracked, by mentions and significance. */
  tier: 'mentioned' | 'provisional' | 'tracked';
  /** How many memories mention it. */
  mentions: number;
  /** Sum of the importance of those memories. */
  significance: number;
  first_seen: number;
  last_seen: number;
  /** What is known of it, checked against the domain's concept type (stored as JSON text). */
  attributes?: Record<string, string | number | boolean>;
}

/** The concepts new memories mention, found before they were written (see `MemoryStore.apply`). */
export interface ConceptWrite {
  /** Concepts whose counts changed, whole. */
  concepts: readonly ConceptRecord[];
  mentions: ReadonlyArray<{ memory: string; concept: string }>;
  /** Memories whose concepts were found (stored with `concepts_at`, so a restart does not find them again). */
  extracted: readonly string[];
  at: number;
  /** Other names of concepts the texts gave (source `extracted`), new to the agent. */
  aliases?: readonly AliasRow[];
}

/** One alias as stored: one record per alias text. */
export interface AliasRow {
  text: string;
  concept: string;
  type: string;
  source: string;
}

/** What is written with new memories in their transaction. */
export interface WrittenWith {
  /** Vectors made by `model`, by memory id. */
  vectors?: { model: string; byId: ReadonlyMap<string, Float32Array> } | undefined;
  concepts?: ConceptWrite | undefined;
}

/** What a write may change in a stored memory: what consolidation changes, and a recall's reinforcement (absolute values). */
export type StoredChanges = MemoryChanges & Partial<Pick<MemoryRecord, 'access_count' | 'last_accessed'>>;

/** New memories and changes to stored ones, with what is written alongside the new ones. */
export interface MemoryWrite {
  records: readonly MemoryRecord[];
  changes: ReadonlyArray<{ id: string; changes: StoredChanges }>;
  withNew: WrittenWith;
  /** Tool calls' records saved with them (a read-only call's, as it ends), made into rows when queued: what is stored is what the call answered. */
  calls?: ReadonlyArray<ReturnType<typeof callBinding>>;
}

/** The bindings of one transaction that stores `writes` in order (a later concept row replaces an earlier one). */
export function writeBindings(writes: readonly MemoryWrite[]): {
  rows: unknown[];
  updates: unknown[];
  concepts: unknown[];
  mentions: unknown[];
  aliases: unknown[];
  calls: unknown[];
} {
  const out = {
    rows: [] as unknown[],
    updates: [] as unknown[],
    concepts: [] as unknown[],
    mentions: [] as unknown[],
    aliases: [] as unknown[],
    calls: [] as unknown[],
  };
  for (const { records, changes, withNew, calls } of writes) {
    out.calls.push(...(calls ?? []));
    const { vectors, concepts } = withNew;
    const extracted = new Set(concepts?.extracted);
    for (const { id, ...rest } of records) {
      const vector = vectors?.byId.get(id);
      out.rows.push({
        ...defined(rest),
        id: new RecordId('memory', id),
        ...(vector ? { embedding: vectorBytes(vector), embedding_model: vectors!.model } : {}),
        ...(extracted.has(id) ? { concepts_at: concepts!.at } : {}),
      });
    }
    for (const c of changes) out.updates.push({ id: new RecordId('memory', c.id), set: defined(c.changes) });
    const bound = conceptBindings(concepts?.concepts ?? [], concepts?.mentions ?? []);
    out.concepts.push(...bound.concepts);
    out.mentions.push(...bound.mentions);
    out.aliases.push(...aliasBindings(concepts?.aliases ?? []));
  }
  return out;
}

/** A tool call's row for an UPSERT under its call id: its status (looked up by) and the whole record as JSON. */
export function callBinding(record: ToolCallRecord): { id: RecordId; row: { status: string; record: string } } {
  return { id: new RecordId('tool_call', record.call_id), row: { status: record.status, record: JSON.stringify(record) } };
}

/** Alias rows for an UPSERT: the record id is the lower-case text, so an alias is stored once. */
export function aliasBindings(aliases: readonly AliasRow[]): Array<{ id: RecordId; row: AliasRow }> {
  return aliases.map((a) => ({ id: new RecordId('alias', a.text.toLowerCase()), row: a }));
}

/**
 * A vector as stored: its float32 values as little-endian bytes (as the embedding service sends
 * them), one CBOR byte string. An array of 384 numbers cost a hearer's write about 0.9 ms of CPU
 * more, each number encoded and then parsed by SurrealDB on its own.
 */
export function vectorBytes(v: Float32Array): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** Bytes from `vectorBytes`, as SurrealDB hands them back. */
export type StoredVector = ArrayBuffer | Uint8Array;

export function storedVector(stored: StoredVector): Float32Array {
  const bytes = stored instanceof Uint8Array ? stored : new Uint8Array(stored);
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

/** The object without its undefined entries (SurrealDB fields are NONE when absent). */
function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function conceptBindings(
  concepts: readonly ConceptRecord[],
  mentions: ReadonlyArray<{ memory: string; concept: string }>,
): { concepts: unknown[]; mentions: unknown[] } {
  return {
    concepts: concepts.map(conceptRow),
    mentions: mentions.map((m) => ({ in: new RecordId('memory', m.memory), out: new RecordId('concept', m.concept) })),
  };
}

export function conceptRow({ key, attributes, ...row }: ConceptRecord): { id: RecordId; row: Record<string, unknown> } {
  return { id: new RecordId('concept', key), row: attributes ? { ...row, attributes: JSON.stringify(attributes) } : row };
}

const OPTIONAL_NUMBERS = ['occurred_at', 'superseded_at', 'demoted_at'] as const;
const OPTIONAL_TEXTS = ['insight_key', 'superseded_by', 'superseded_reason', 'compacted_into'] as const;

export function fromRow(row: MemoryRow): MemoryRecord {
  const record = {
    id: String(row.id.id),
    content: row.content,
    importance: Number(row.importance),
    emotional_weight: Number(row.emotional_weight),
    tags: row.tags,
    source: normaliseSource(row.source),
    created_at: Number(row.created_at),
    last_accessed: Number(row.last_accessed),
    access_count: Number(row.access_count),
  } as MemoryRecord;
  if (Array.isArray(row.derived_from)) record.derived_from = row.derived_from;
  for (const f of OPTIONAL_NUMBERS) if (row[f] != null) record[f] = Number(row[f]);
  for (const f of OPTIONAL_TEXTS) if (row[f] != null) record[f] = row[f];
  return record;
}
