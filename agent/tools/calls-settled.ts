import type { ToolCallRecord } from '../../shared/protocol/index.js';
import { unsettled } from './interrupted-call.js';

/** What waiting on calls needs of the governed path: each call's record, and word of each change. */
export interface SettlingCalls {
  getCall(id: string): Promise<ToolCallRecord | undefined>;
  listen(listener: (record: ToolCallRecord) => void): () => void;
}

/**
 * Resolves with the records of `ids` once none of them is under way any more: not waiting for a
 * person (pending, or cut off by a crash), nor approved and waiting to run, nor running. A call
 * the agent no longer knows is left out. Rejects with the signal's reason when it aborts.
 */
export function callsSettled(calls: SettlingCalls, ids: readonly string[], signal: AbortSignal): Promise<ToolCallRecord[]> {
  return new Promise((resolve, reject) => {
    let checking = false;
    let again = false;
    const check = async (): Promise<void> => {
      // One look at a time; a change seen meanwhile looks again once it ends.
      if (checking) return void (again = true);
      checking = true;
      try {
        do {
          again = false;
          const records = (await Promise.all(ids.map((id) => calls.getCall(id)))).filter((r): r is ToolCallRecord => r !== undefined);
          if (!records.some(unsettled)) return finish(() => resolve(records));
        } while (again);
      } catch (err) {
        finish(() => reject(err as Error));
      } finally {
        checking = false;
      }
    };
    const stop = calls.listen((r) => {
      if (ids.includes(r.call_id)) void check();
    });
    const aborted = () => finish(() => reject(signal.reason as Error));
    const finish = (then: () => void) => {
      stop();
      signal.removeEventListener('abort', aborted);
      then();
    };
    if (signal.aborted) return aborted();
    signal.addEventListener('abort', aborted, { once: true });
    void check();
  });
}
