import type { Tool } from '../../shared/domain/index.js';
import type { ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { CallStatus, ToolCallRecord } from '../../shared/protocol/index.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { CallStore } from './call-store.js';

const RECORD_TEXT_MAX = 600;
const RECENT_CALLS = 50;

/** How a call ended: its status, and its result or its error. */
export interface CallOutcome {
  status: CallStatus;
  result?: unknown;
  error?: ThymosError;
}

export interface CallRecorderOptions {
  calls: CallStore;
  /** Stores memories whatever the agent's mode (a Listening agent's read-only calls are remembered too). */
  remember(memories: NewMemory[]): Promise<unknown>;
  /** Within how long a read-only call's record is stored after it answers (`[tools] record_reads_within_ms`); 0: before. */
  recordReadsWithinMs?: number | undefined;
  /** Takes the value of every secret the agent's tools use out of a value. */
  redact<T>(value: T): T;
  logger: Logger;
}

/**
 * The record of an agent's calls: each record as it changes, saved in the agent's database (or
 * written behind, for a read-only call that answered), counted by tool and status, kept among
 * the latest 50 of this run, and told to those who listen; each ended call remembered as a
 * `tool_call` memory, with every secret taken out.
 */
export class CallRecorder {
  readonly #o: CallRecorderOptions;
  readonly #listeners = new Set<(record: ToolCallRecord) => void>();
  #recent: ToolCallRecord[] = [];
  readonly #counts = new Map<string, number>();

  constructor(options: CallRecorderOptions) {
    this.#o = options;
  }

  /** The latest calls of this run (at most 50), newest first. */
  get recent(): ToolCallRecord[] {
    return this.#recent;
  }

  /** Calls `listener` with each call's record as it changes (pending, decided, running, ended); returns how to stop. */
  listen(listener: (record: ToolCallRecord) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The calls of this process by tool and status (a call counts once, as it ends or waits). */
  counts(): Array<{ tool: string; status: CallStatus; count: number }> {
    return [...this.#counts].map(([key, count]) => {
      const [tool, status] = key.split(' ') as [string, CallStatus];
      return { tool, status, count };
    });
  }

  /** Records `record` now, `soon` (written behind), or `not` (a read-only call as it starts), and tells the listeners. */
  async save(record: ToolCallRecord, when: 'now' | 'soon' | 'not' = 'now'): Promise<void> {
    const within = this.#o.recordReadsWithinMs ?? 0;
    let behind: Promise<void> | undefined;
    try {
      behind = when === 'soon' && within > 0 ? this.#o.calls.saveCallSoon?.(record, within) : undefined;
    } catch {
      // A store that is closing takes no write behind: saved now, as any other, or refused as any other.
      behind = undefined;
    }
    // Not awaited: a failed write is tried again until the store closes; the call has answered.
    if (behind)
      behind.catch((err: unknown) =>
        this.#o.logger.warn(
          { tool: record.tool, call: record.call_id, err: (err as Error).message },
          'the record of a read-only call was not kept',
        ),
      );
    else if (when !== 'not') await this.#o.calls.saveCall(record);
    // A call counts once as it waits (not again when decided) and once as it ends.
    if (record.status !== 'running' && !(record.status === 'pending' && record.decided_by !== undefined)) {
      const key = `${record.tool} ${record.status}`;
      this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    }
    this.#recent = [record, ...this.#recent.filter((r) => r.call_id !== record.call_id)].slice(0, RECENT_CALLS);
    for (const l of this.#listeners) l(record);
  }

  /** Ends a call with `outcome` after `ms`: saved, remembered and logged; a failure to remember is logged, never the call's. */
  async finish(record: ToolCallRecord, tool: Tool | undefined, outcome: CallOutcome, ms: number): Promise<ToolCallRecord> {
    const done: ToolCallRecord = this.#o.redact({
      ...record,
      status: outcome.status,
      finished_at: new Date().toISOString(),
      duration_ms: Math.round(ms),
      ...(outcome.result !== undefined ? { result: outcome.result } : {}),
      ...(outcome.error ? { error: outcome.error.toJSON() } : {}),
    });
    // A read-only call that did not wait for a person is written behind with its memory: repeating it changes nothing, so a crash before the write loses only its record.
    await this.save(
      done,
      tool?.sideEffect === 'read_only' && tool.permission !== 'confirm' && done.decided_by === undefined ? 'soon' : 'now',
    );
    try {
      await this.#o.remember([
        {
          id: `call_${done.call_id}`,
          content: recordText(done),
          tags: ['tool_call', done.tool, ...(tool?.tags ?? [])],
          importance: 0.5,
          source: { kind: 'tool_call', by: done.caller },
        },
      ]);
    } catch (err) {
      this.#o.logger.warn({ tool: done.tool, call: done.call_id, err: (err as Error).message }, 'the memory of a tool call was not kept');
    }
    this.#o.logger.info(
      {
        tool: done.tool,
        call: done.call_id,
        caller: done.caller,
        status: done.status,
        ms: done.duration_ms,
        ...(done.error ? { code: done.error.code } : {}),
      },
      'tool call',
    );
    return done;
  }
}

/** The sentence a call is remembered by: what, with what, for whom, why, and how it ended. */
function recordText(r: ToolCallRecord): string {
  const clip = (s: string) => (s.length > RECORD_TEXT_MAX ? `${s.slice(0, RECORD_TEXT_MAX)}…` : s);
  const ended =
    r.status === 'ok'
      ? `ok: ${clip(typeof r.result === 'string' ? r.result : JSON.stringify(r.result))}`
      : `${r.status}: ${r.error ? `${r.error.code} ${clip(r.error.message)}` : ''}`;
  return `Tool call ${r.tool} ${clip(JSON.stringify(r.arguments))} for ${r.caller}${r.reason ? `, because ${r.reason}` : ''} — ${ended}`;
}
