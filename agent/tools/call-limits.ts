import PQueue from 'p-queue';

import type { Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';

/**
 * The `maxConcurrent` and `ratePerMinute` of each tool that declares them, in this agent: a
 * p-queue per tool (concurrency, and a sliding 60 s window for the rate). A call waits its turn
 * within its own timeout; one whose timeout passes while it waits never ran, and is refused
 * TOOL_RATE_LIMITED. The limits hold per agent process, and start afresh when it restarts.
 */
export class CallLimits {
  readonly #queues = new Map<string, PQueue>();

  /**
   * Runs `run` when the tool's limits allow, or at once when it has none. If `signal` fires
   * first, `refuse` is called with why (TOOL_RATE_LIMITED for the timeout, else the signal's
   * reason) and `run` never is.
   */
  async take<T>(
    name: string,
    tool: Tool,
    signal: AbortSignal,
    run: () => Promise<T>,
    refuse: (error: ThymosError) => Promise<T>,
  ): Promise<T> {
    const queue = this.#queue(name, tool);
    if (!queue) return run();
    const waiting = performance.now();
    // The queue is told of an abort only while the call waits: once it runs, it ends as the executor ends (recorded, its slot held until then).
    const whileQueued = new AbortController();
    const onAbort = () => whileQueued.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    let started = false;
    try {
      return await queue.add(
        () => {
          started = true;
          signal.removeEventListener('abort', onAbort);
          return run();
        },
        { signal: whileQueued.signal },
      );
    } catch (err) {
      if (started) throw err;
      const reason = toThymosError(signal.aborted ? signal.reason : err);
      if (reason.code !== ErrorCode.TOOL_TIMEOUT) return refuse(reason);
      const limits = [
        tool.maxConcurrent != null ? `maxConcurrent ${tool.maxConcurrent}` : '',
        tool.ratePerMinute != null ? `ratePerMinute ${tool.ratePerMinute}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      const waited = Math.round(performance.now() - waiting);
      return refuse(
        new ThymosError(
          ErrorCode.TOOL_RATE_LIMITED,
          `${name} waited ${waited} ms for its turn (${limits}) and its timeout (${tool.timeoutMs} ms) passed; it did not run`,
          { details: { waited_ms: waited } },
        ),
      );
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  #queue(name: string, tool: Tool): PQueue | undefined {
    if (tool.maxConcurrent == null && tool.ratePerMinute == null) return undefined;
    let q = this.#queues.get(name);
    if (!q) {
      q = new PQueue({
        concurrency: tool.maxConcurrent ?? Number.POSITIVE_INFINITY,
        ...(tool.ratePerMinute != null ? { intervalCap: tool.ratePerMinute, interval: 60_000, strict: true } : {}),
      });
      this.#queues.set(name, q);
    }
    return q;
  }
}
