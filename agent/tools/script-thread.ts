import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';

import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import type { ExecutorContext } from './executor-context.js';
import { type FromScriptWorker, FromScriptWorkerSchema, type ScriptWorkerData, type ToScriptWorker } from './script-messages.js';

/**
 * How long a script whose signal fired may take to return before its worker is stopped: long
 * enough to clean up as the signal asks, short enough that one ignoring it (or stuck in a
 * synchronous loop, which never sees it) burns little. Its call is answered at the signal all the same.
 */
export const ABORT_GRACE_MS = 1000;

export interface ScriptThreadOptions {
  /** The module the worker imports (absolute). */
  path: string;
  /** The worker's heap limit (`[tools] script_memory_mb`). */
  memoryMb: number;
  /** Takes secrets out of what the script writes to standard output and error. */
  redact(text: string): string;
  /** Told once when the worker has ended, whatever ended it. */
  ended(thread: ScriptThread): void;
}

interface RunningCall {
  id: number;
  ctx: ExecutorContext;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  stop(): void;
}

/**
 * One worker thread (node:worker_threads) that runs the functions of one Script module, one call
 * at a time. The worker has a heap of its own, bounded by `memoryMb`; running out of it ends the
 * worker, not the agent. When a call's signal fires, the worker's copy of the signal fires too,
 * and a call still running `ABORT_GRACE_MS` later has its worker terminated, which stops even a
 * synchronous loop. While a call runs, the worker may ask the agent for the world store's
 * operations and `publish`, as the agent; once the call has ended or been aborted, nothing it asks is done.
 */
export class ScriptThread {
  readonly #o: ScriptThreadOptions;
  readonly #worker: Worker;
  #call: RunningCall | undefined;
  #calls = 0;
  /** Why the worker ended (set once it has), for the call it cut. */
  #gone: ThymosError | undefined;

  constructor(options: ScriptThreadOptions) {
    this.#o = options;
    const entry = workerEntry();
    const workerData: ScriptWorkerData = { path: options.path };
    this.#worker = new Worker(entry.filename, {
      eval: entry.eval,
      workerData,
      resourceLimits: { maxOldGenerationSizeMb: options.memoryMb },
      stdout: true,
      stderr: true,
    });
    // An idle worker does not keep the agent's process alive.
    this.#worker.unref();
    redactInto(this.#worker.stdout, process.stdout, options.redact);
    redactInto(this.#worker.stderr, process.stderr, options.redact);
    this.#worker.on('message', (m: unknown) => this.#message(m));
    this.#worker.on('error', (err: Error & { code?: string }) => this.#end(this.#why(err)));
    this.#worker.on('exit', (code) =>
      this.#end(
        new ThymosError(
          ErrorCode.TOOL_FAILED,
          `the worker running ${options.path} exited (code ${code}), as process.exit() or an uncaught error in a script ends it`,
          { details: { exit_code: code } },
        ),
      ),
    );
  }

  /** Whether a call may be given to it: its worker is up and runs nothing. */
  get idle(): boolean {
    return this.#gone === undefined && this.#call === undefined;
  }

  /** Whether its worker has ended. */
  get ended(): boolean {
    return this.#gone !== undefined;
  }

  /**
   * Runs the function `name` of the module with `input`. Settles when the call has ended: with
   * its result or error, or, once its worker is gone (stopped after the signal's grace, out of
   * memory, exited), with why. Not before: the tool's answer at a timeout does not wait for it.
   */
  run(name: string, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
    if (!this.idle)
      throw new ThymosError(ErrorCode.INTERNAL, `the worker of ${this.#o.path} was given a call while ${this.#gone ? 'ended' : 'busy'}`);
    return new Promise((resolve, reject) => {
      const id = ++this.#calls;
      let grace: NodeJS.Timeout | undefined;
      const onAbort = () => {
        this.#post({ kind: 'abort', id, reason: toThymosError(ctx.signal.reason, ErrorCode.CANCELLED).toJSON() });
        grace = setTimeout(() => void this.#worker.terminate(), ABORT_GRACE_MS);
      };
      const stop = () => {
        ctx.signal.removeEventListener('abort', onAbort);
        clearTimeout(grace);
        this.#call = undefined;
      };
      this.#call = { id, ctx, resolve, reject, stop };
      this.#post({
        kind: 'call',
        id,
        export: name,
        input,
        facts: {
          agent: ctx.agent,
          tool: ctx.tool,
          caller: ctx.caller,
          reason: ctx.reason,
          callId: ctx.callId,
          idempotencyKey: ctx.idempotencyKey,
        },
      });
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Ends the worker, whatever it runs. */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }

  #post(message: ToScriptWorker): void {
    if (this.#gone === undefined) this.#worker.postMessage(message);
  }

  #message(message: unknown): void {
    const call = this.#call;
    const parsed = FromScriptWorkerSchema.safeParse(message);
    if (!parsed.success) {
      // Only the script's own code, posting on the worker's port, sends what the worker does not.
      if (call) this.#end(new ThymosError(ErrorCode.TOOL_FAILED, 'its worker sent the agent a message it does not take, and was stopped'));
      return void this.#worker.terminate();
    }
    const m = parsed.data;
    if (!call || m.id !== call.id) return;
    if (m.kind === 'ask') return void this.#answer(call, m);
    call.stop();
    if (m.kind === 'done') call.resolve(m.json === undefined ? undefined : JSON.parse(m.json));
    else
      call.reject(
        new ThymosError(m.error.code, m.error.message, {
          ...(m.error.location ? { location: m.error.location } : {}),
          ...(m.error.details ? { details: m.error.details } : {}),
        }),
      );
  }

  /** Does what a running call asks, as the agent; refused once its signal has fired. */
  async #answer(call: RunningCall, m: Extract<FromScriptWorker, { kind: 'ask' }>): Promise<void> {
    try {
      if (call.ctx.signal.aborted) throw toThymosError(call.ctx.signal.reason, ErrorCode.CANCELLED);
      const { world, publish } = call.ctx.world();
      const args = m.args as never[];
      const value: unknown =
        m.what === 'publish' ? await publish(args[0]!) : await (world[m.what] as (...a: unknown[]) => Promise<unknown>).apply(world, args);
      this.#post({ kind: 'answer', ask: m.ask, value });
    } catch (err) {
      this.#post({ kind: 'answer', ask: m.ask, error: toThymosError(err, ErrorCode.TOOL_FAILED).toJSON() });
    }
  }

  #why(err: Error & { code?: string }): ThymosError {
    if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return new ThymosError(
        ErrorCode.TOOL_FAILED,
        `ran out of memory: its worker's heap reached [tools] script_memory_mb = ${this.#o.memoryMb} MB and the worker was stopped`,
        { details: { memory_limit_mb: this.#o.memoryMb } },
      );
    }
    return new ThymosError(ErrorCode.TOOL_FAILED, `its worker ended on an uncaught error: ${err.message}`);
  }

  /** The worker has ended: the first reason given is the one kept; the call it cut gets it (or its signal's reason, if the signal ended it). */
  #end(why: ThymosError): void {
    if (this.#gone) return;
    this.#gone = why;
    const call = this.#call;
    if (call) {
      call.stop();
      call.reject(
        call.ctx.signal.aborted
          ? call.ctx.signal.reason
          : new ThymosError(why.code, `${call.ctx.tool}: ${why.message}`, { ...(why.details ? { details: why.details } : {}) }),
      );
    }
    this.#o.ended(this);
  }
}

/** Copies what a worker writes into the agent's own stream, secrets taken out (a chunk is one write, so a secret is never cut in two). */
function redactInto(from: Readable, to: NodeJS.WritableStream, redact: (text: string) => string): void {
  from.setEncoding('utf8');
  from.on('data', (text: string) => to.write(redact(text)));
}

/**
 * The worker's entry: `script-worker.js` beside this module once compiled (in `dist/bin` when
 * bundled). Run from its TypeScript source (tsx, as the tests and benches run), the worker loads
 * the source through tsx as well, which a worker does not inherit.
 */
function workerEntry(): { filename: string | URL; eval: boolean } {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return { filename: new URL('./script-worker.js', here), eval: false };
  const source = JSON.stringify(new URL('./script-worker.ts', here).href);
  return { filename: `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${source}); });`, eval: true };
}
