import type { ScriptExecutor, Tool } from '../../shared/domain/index.js';
import type { ExecutorContext } from './executor-context.js';
import { ScriptPool } from './script-pool.js';

export interface ScriptExecutorsOptions {
  /** Each worker's heap limit in MB (`[tools] script_memory_mb`). */
  memoryMb: number;
  /** The most workers of one module, so its calls at once (`[tools] script_threads`). */
  maxThreads: number;
  /** Takes secrets out of what a script writes to standard output and error. */
  redact(text: string): string;
}

/**
 * Runs an agent's Script tools: the named export of the application's compiled module, called
 * with the input and a `ScriptContext`, in a worker thread of the module's `ScriptPool` (one
 * pool per module, started with the agent, so each module is imported before its first call).
 * What the function returns is the result, once it is a JSON value (else TOOL_FAILED); what it
 * throws is TOOL_FAILED with its message (a ThymosError keeps its code). At the timeout the call
 * is answered TOOL_TIMEOUT, the script's signal fires, and a worker still running after the
 * grace is terminated, synchronous code included; a worker that runs out of heap is TOOL_FAILED
 * naming the limit. Either way the agent is untouched and a fresh worker takes the next call.
 */
export class ScriptExecutors {
  readonly #o: ScriptExecutorsOptions;
  readonly #pools = new Map<string, ScriptPool>();

  constructor(tools: readonly Tool[], options: ScriptExecutorsOptions) {
    this.#o = options;
    for (const t of tools) if (t.executor.kind === 'script') this.#pool(t.executor.path);
  }

  run(tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
    const exec = tool.executor as ScriptExecutor;
    return this.#pool(exec.path).run(exec.export, input, ctx);
  }

  /** Ends every worker (the agent is stopping). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#pools.values()].map((p) => p.close()));
  }

  #pool(path: string): ScriptPool {
    let pool = this.#pools.get(path);
    if (!pool) this.#pools.set(path, (pool = new ScriptPool({ path, ...this.#o })));
    return pool;
  }
}
