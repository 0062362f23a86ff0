import { type MemoryRecord, type MemorySource, newRecord } from './memory-record.js';

/** A memory to store; everything but the content has a default. */
export interface NewMemory {
  /**
   * A stable id makes the write idempotent: a memory with this id already stored is kept as
   * it is and not written again (how a redelivered event stays one memory). Unset: a new UUID.
   */
  id?: string;
  content: string;
  /** 0..1. @default 0.5 */
  importance?: number;
  /** 0..1. @default 0 */
  emotional_weight?: number;
  /** @default [] */
  tags?: readonly string[];
  source: MemorySource;
  /** Memories this one was made from: an insight's sources, or the turn a learned fact was told in. */
  derived_from?: readonly string[];
  /** When what it tells happened (ms), if not now. */
  occurred_at?: number;
}

/**
 * The records a write makes of `inputs` at `now`. An input whose id is stored already (`stored`)
 * or repeated within the write makes none: `out` has the record it names in its place, and
 * `created` only what is new. Turns of a thread get strictly increasing times, after the
 * thread's last turn (`lastTurnAt`), so a reload links them in the order they were written.
 */
export function newRecords(
  inputs: readonly (NewMemory & { insight_key?: string })[],
  now: number,
  stored: (id: string) => MemoryRecord | undefined,
  lastTurnAt: (thread: string) => number | undefined,
): { out: MemoryRecord[]; created: MemoryRecord[] } {
  const fresh = new Map<string, MemoryRecord>();
  const out: MemoryRecord[] = [];
  const turnTimes = new Map<string, number>();
  for (const input of inputs) {
    const known = input.id === undefined ? undefined : (stored(input.id) ?? fresh.get(input.id));
    if (known) {
      out.push(known);
      continue;
    }
    const thread = input.source.thread;
    let at = now;
    if (thread !== undefined) {
      const before = turnTimes.get(thread) ?? lastTurnAt(thread) ?? -Infinity;
      at = Math.max(now, before + 1);
      turnTimes.set(thread, at);
    }
    const record = newRecord(input, at);
    if (input.derived_from) record.derived_from = [...input.derived_from];
    if (input.insight_key) record.insight_key = input.insight_key;
    fresh.set(record.id, record);
    out.push(record);
  }
  return { out, created: [...fresh.values()] };
}
