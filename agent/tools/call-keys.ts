import { isDeepStrictEqual } from 'node:util';

import { keyFields, type Tool, wellFormed } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { CallStatus, ToolCallRecord } from '../../shared/protocol/index.js';

/** The side effects a repeated idempotency key never repeats. */
const ONCE: ReadonlySet<Tool['sideEffect']> = new Set(['writes_external', 'irreversible']);
/** Where the latest call under each key is kept: the agent's database. */
export interface KeyStore {
  /** The latest call of `tool` that ran or waited under `key`. */
  callWithKey(tool: string, key: string): Promise<ToolCallRecord | undefined>;
  /** Makes `callId` that call. */
  claimKey(tool: string, key: string, callId: string): Promise<void>;
}

/** Which generation of `key` a call carried: 1 for the key itself, n for `key~n` (`keyExpiresAfterS`). */
function generation(call: ToolCallRecord, key: string): number {
  const n = call.idempotency_key.startsWith(`${key}~`) ? Number(call.idempotency_key.slice(key.length + 1)) : 1;
  return Number.isInteger(n) && n > 1 ? n : 1;
}

/** What an earlier call with the key may be for a repeat to answer with it: done, or still under way. */
const ANSWERED_BY: ReadonlySet<CallStatus> = new Set(['ok', 'pending', 'running']);
/**
 * What an earlier call cut off by a crash (`interrupted_at`) may be for a repeat to answer with
 * it too: waiting for a person or to run again by rule, or refused by a person after the crash.
 * A repeat never runs what a person was asked about, nor what they refused to run again.
 */
const ANSWERED_AFTER_CRASH: ReadonlySet<CallStatus> = new Set(['interrupted', 'refused']);

/** Whether a call is kept from running twice under its key: its tool writes outside the agent, and the call has a key of its own (not its id). */
export function keyedOnce(tool: Tool, record: ToolCallRecord): boolean {
  return ONCE.has(tool.sideEffect) && record.idempotency_key !== record.call_id;
}

/**
 * A call's idempotency key: the tool's template filled from the input (each value
 * percent-encoded, so the key is plain ASCII fit for a header, `~` too, so that no value spells
 * another key's later generation `key~2`), else the caller's key (which holds no `~`), else the
 * call id.
 */
export function idempotencyKey(tool: Tool, input: Record<string, unknown>, callId: string, callerKey: string | undefined): string {
  if (!tool.idempotencyKey) return callerKey ?? callId;
  let key = tool.idempotencyKey;
  for (const f of keyFields(tool.idempotencyKey)) {
    const v = input[f];
    key = key.replaceAll(
      `{${f}}`,
      v === undefined ? '' : encodeURIComponent(wellFormed(typeof v === 'string' ? v : JSON.stringify(v))).replaceAll('~', '%7E'),
    );
  }
  return key;
}

/**
 * Keeps a `writes_external` or `irreversible` call from running twice under one idempotency
 * key (from the tool's template or the caller; a call id is never repeated). Calls with the
 * same tool and key take turns in this process; each first looks up the latest call that ran or
 * waited under the key in the agent's database. One that ended `ok`, or still waits for approval
 * or runs, is the answer (marked `replayed`), and nothing runs. So is one cut off by a crash
 * (`interruptedCall`): it waits for a person, or runs again by itself when its service honours
 * the key, and a repeat does not run it meanwhile; refused after the crash, it stays refused. One
 * that failed, or was refused before it ran, does not count: the call runs again, carrying the
 * same key to the service (an `interrupted` record older than this rule, without
 * `interrupted_at`, counts as failed). One that ended `ok` longer ago than its tool's
 * `keyExpiresAfterS` does not count either (counted from when it ended): the key is spent, and the new call carries its next
 * generation (`key~2`, `key~3`…). An earlier call with the key but other arguments is
 * IDEMPOTENCY_CONFLICT. A call
 * refused before its turn (the agent's mode, an admin tool) never claims the key.
 */
export class CallKeys {
  readonly #turns = new Map<string, Promise<unknown>>();
  readonly #store: KeyStore;

  constructor(store: KeyStore) {
    this.#store = store;
  }

  async once(tool: Tool, record: ToolCallRecord, run: (record: ToolCallRecord) => Promise<ToolCallRecord>): Promise<ToolCallRecord> {
    if (!keyedOnce(tool, record)) return run(record);
    const id = `${record.tool} ${record.idempotency_key}`;
    const turn = (this.#turns.get(id) ?? Promise.resolve()).then(async () => {
      const earlier = await this.#store.callWithKey(record.tool, record.idempotency_key);
      const expired = earlier !== undefined && this.#expired(tool, earlier);
      if (earlier && !expired) {
        const answer = this.#answer(earlier, record);
        if (answer) return answer;
      }
      // Claimed before it runs or waits: a crash after this leaves the key naming a call found interrupted, which answers repeats.
      await this.#store.claimKey(record.tool, record.idempotency_key, record.call_id);
      // Past its tool's keyExpiresAfterS, the key is spent: the next generation goes to the service.
      return run(
        expired ? { ...record, idempotency_key: `${record.idempotency_key}~${generation(earlier, record.idempotency_key) + 1}` } : record,
      );
    });
    const settled = turn.catch(() => undefined);
    this.#turns.set(id, settled);
    void settled.then(() => {
      if (this.#turns.get(id) === settled) this.#turns.delete(id);
    });
    return turn;
  }

  /**
   * An earlier call that ended `ok` more than its tool's `keyExpiresAfterS` ago (one still waiting
   * or running never expires). Counted from its end, not its request: a call that ran long, or
   * waited long for a person, keeps its key for the whole time after it was done.
   */
  #expired(tool: Tool, found: ToolCallRecord): boolean {
    if (tool.keyExpiresAfterS == null || found.status !== 'ok') return false;
    return Date.now() - Date.parse(found.finished_at ?? found.requested_at) > tool.keyExpiresAfterS * 1000;
  }

  #answer(found: ToolCallRecord, record: ToolCallRecord): ToolCallRecord | undefined {
    const answers = ANSWERED_BY.has(found.status) || (found.interrupted_at !== undefined && ANSWERED_AFTER_CRASH.has(found.status));
    if (!answers) return undefined;
    if (!isDeepStrictEqual(found.arguments, record.arguments)) {
      throw new ThymosError(
        ErrorCode.IDEMPOTENCY_CONFLICT,
        `${record.tool}: the idempotency key ${JSON.stringify(record.idempotency_key)} belongs to call ${found.call_id} (${found.status}), made with other arguments; give another key, or the same arguments`,
        {
          details: { call_id: found.call_id },
        },
      );
    }
    return { ...found, replayed: true };
  }
}
