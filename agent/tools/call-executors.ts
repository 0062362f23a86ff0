import { ToolsSettingsSchema } from '../../shared/config/index.js';
import type { Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ToolCallRecord } from '../../shared/protocol/index.js';
import { checkOutput } from './check-output.js';
import type { ExecutorContext } from './executor-context.js';
import { runHttp } from './http-executor.js';
import { type FindEndpoint, McpExecutors } from './mcp-executor.js';
import { ScriptExecutors } from './script-executor.js';
import { runSubprocess } from './subprocess-executor.js';

/** What runs a call, by the executor's kind (Mcp keeps sessions and Script its workers, so each CallExecutors has its own). */
const EXECUTORS: Record<
  Exclude<Tool['executor']['kind'], 'mcp' | 'script'>,
  (tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext) => Promise<unknown>
> = {
  http: runHttp,
  subprocess: runSubprocess,
};

const SCRIPT_DEFAULTS = {
  memoryMb: ToolsSettingsSchema.shape.script_memory_mb.parse(undefined),
  maxThreads: ToolsSettingsSchema.shape.script_threads.parse(undefined),
};
/** The shortest secret a tool sends: a shorter one would be found (and replaced) all over ordinary text. */
const SECRET_MIN_CHARS = 8;

export interface CallExecutorsOptions {
  agent: string;
  /** The tools the agent's capabilities grant (a Script tool's module is loaded in workers of its own). */
  tools: readonly Tool[];
  world: ExecutorContext['world'];
  /** A Script worker's heap limit in MB, and the most workers of one Script module (`[tools] script_memory_mb`, `script_threads`). */
  scripts?: { memoryMb: number; maxThreads: number } | undefined;
  env: NodeJS.ProcessEnv;
  /** Takes the value of every secret the agent's tools use out of a value. */
  redact<T>(value: T): T;
  /** Run before every call: under a lease, stops the process once the agent's fence has passed, so a call is never made after it. */
  guard?: (() => void) | undefined;
}

/**
 * The executors of an agent's calls: each call gets its context (who, why, its key, its
 * deadline, its secrets from the agent's environment), runs on the executor its tool declares
 * until it answers or its signal fires, and its result is checked against the tool's output
 * with every secret taken out first.
 */
export class CallExecutors {
  readonly #o: CallExecutorsOptions;
  readonly #mcp: McpExecutors;
  readonly #scripts: ScriptExecutors;

  constructor(options: CallExecutorsOptions) {
    this.#o = options;
    this.#mcp = new McpExecutors(options.agent);
    this.#scripts = new ScriptExecutors(options.tools, { ...(options.scripts ?? SCRIPT_DEFAULTS), redact: options.redact });
  }

  /** Gives the Mcp tools the way to find other agents. */
  link(find: FindEndpoint): void {
    this.#mcp.link(find);
  }

  close(): void {
    void this.#mcp.close();
    void this.#scripts.close();
  }

  /** Runs the call on its executor; rejects with the signal's reason once it fires, whether or not the executor heeds it. */
  async run(tool: Tool, record: ToolCallRecord, signal: AbortSignal, deadline: number): Promise<unknown> {
    this.#o.guard?.();
    const ctx = this.#context(record, signal, deadline);
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason as Error);
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
    aborted.catch(() => undefined);
    const kind = tool.executor.kind;
    const run =
      kind === 'mcp'
        ? this.#mcp.run(tool, record.arguments, ctx)
        : kind === 'script'
          ? this.#scripts.run(tool, record.arguments, ctx)
          : EXECUTORS[kind](tool, record.arguments, ctx);
    const result = await Promise.race([run, aborted]);
    // Secrets are taken out before anything quotes or cuts the result (an output error shows a part of it).
    return checkOutput(record.tool, tool, this.#o.redact(result));
  }

  #context(record: ToolCallRecord, signal: AbortSignal, deadline: number): ExecutorContext {
    const name = record.tool;
    return {
      tool: name,
      agent: this.#o.agent,
      caller: record.caller,
      reason: record.reason,
      callId: record.call_id,
      idempotencyKey: record.idempotency_key,
      signal,
      chain: record.chain ?? [],
      deadline,
      secret: (env) => {
        const value = this.#o.env[env]?.trim();
        if (!value)
          throw new ThymosError(
            ErrorCode.TOOL_FAILED,
            `${name}: the environment variable ${env} that holds its secret is not set in the agent's environment`,
          );
        if (value.length < SECRET_MIN_CHARS)
          throw new ThymosError(
            ErrorCode.TOOL_FAILED,
            `${name}: the secret in ${env} is shorter than ${SECRET_MIN_CHARS} characters, too short to be kept out of what is recorded`,
          );
        return value;
      },
      env: (variable) => this.#o.env[variable],
      redact: (value) => this.#o.redact(value),
      world: this.#o.world,
    };
  }
}
