import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import type { ExecutorContext } from './executor-context.js';
import { ScriptThread } from './script-thread.js';

/** How long a worker beyond the one kept warm may stay idle before it is ended. */
export const EXTRA_IDLE_MS = 30_000;

export interface ScriptPoolOptions {
  /** The Script module (absolute). */
  path: string;
  /** Each worker's heap limit (`[tools] script_memory_mb`). */
  memoryMb: number;
  /** The most workers, so calls at once, of this module (`[tools] script_threads`). */
  maxThreads: number;
  redact(text: string): string;
}

/**
 * The worker threads of one Script module in one agent. One is started at once and kept warm
 * (the module imported, ready for the first call); a call takes an idle worker, or starts
 * another while fewer than `maxThreads` run, or waits for one (first come, first served) within
 * its own timeout. Each worker runs one call at a time, so stopping a worker cuts only its own
 * call. A worker whose call ended is given the next; one that ended (stopped at a timeout, out
 * of memory, exited) is replaced, so a warm one is always there. Workers beyond the first end
 * after `EXTRA_IDLE_MS` idle.
 */
export class ScriptPool {
  readonly #o: ScriptPoolOptions;
  readonly #threads = new Set<ScriptThread>();
  #idle: ScriptThread[] = [];
  #waiting: Array<(thread: ScriptThread) => void> = [];
  #closed = false;

  constructor(options: ScriptPoolOptions) {
    this.#o = options;
    this.#idle.push(this.#start());
  }

  /** Runs `name` of the module in a worker of its own; settles once the call has ended in it (see `ScriptThread.run`). */
  async run(name: string, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
    const thread = await this.#take(ctx.signal);
    try {
      return await thread.run(name, input, ctx);
    } finally {
      this.#give(thread);
    }
  }

  /** Ends every worker; calls running are cut. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#idle = [];
    await Promise.allSettled([...this.#threads].map((t) => t.terminate()));
  }

  #start(): ScriptThread {
    const thread = new ScriptThread({
      path: this.#o.path,
      memoryMb: this.#o.memoryMb,
      redact: this.#o.redact,
      ended: (t) => this.#ended(t),
    });
    this.#threads.add(thread);
    return thread;
  }

  #take(signal: AbortSignal): Promise<ScriptThread> {
    if (this.#closed)
      return Promise.reject(new ThymosError(ErrorCode.AGENT_STOPPING, `the workers of ${this.#o.path} are closed: the agent is stopping`));
    const idle = this.#idle.pop();
    if (idle) return Promise.resolve(idle);
    if (this.#threads.size < this.#o.maxThreads) return Promise.resolve(this.#start());
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#waiting = this.#waiting.filter((w) => w !== turn);
        reject(toThymosError(signal.reason, ErrorCode.CANCELLED));
      };
      const turn = (thread: ScriptThread) => {
        signal.removeEventListener('abort', onAbort);
        resolve(thread);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(turn);
    });
  }

  /** A worker whose call has ended: to the next call waiting, else idle (its replacement, if it ended, is started by `#ended`). */
  #give(thread: ScriptThread): void {
    if (!thread.idle || this.#closed) return;
    const next = this.#waiting.shift();
    if (next) return next(thread);
    this.#idle.push(thread);
    if (this.#idle.length > 1) {
      setTimeout(() => {
        if (this.#idle.length > 1 && this.#idle.includes(thread)) {
          this.#idle = this.#idle.filter((t) => t !== thread);
          void thread.terminate();
        }
      }, EXTRA_IDLE_MS).unref();
    }
  }

  /** A worker has ended: it is forgotten, and a fresh one started for the next call waiting, or kept warm if none is idle. */
  #ended(thread: ScriptThread): void {
    this.#threads.delete(thread);
    this.#idle = this.#idle.filter((t) => t !== thread);
    if (this.#closed) return;
    const next = this.#waiting.shift();
    if (next) return next(this.#start());
    if (this.#idle.length === 0) this.#idle.push(this.#start());
  }
}
