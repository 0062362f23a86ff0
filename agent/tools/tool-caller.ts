import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import { ToolsSettingsSchema } from '../../shared/config/index.js';
import { fillUrl, parseUrlTemplate, UrlInputError } from '../../shared/domain/http-url.js';
import type { Tool } from '../../shared/domain/tool-schema.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import { describeIssues } from '../../shared/errors/zod-issues.js';
import type { Logger } from '../../shared/platform/logger.js';
import type { ApprovalDecision, CallStatus, ToolCallRecord } from '../../shared/protocol/tool-call.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { RuntimeGate } from '../runtime/runtime-ports.js';
import { CallApprovals, type SubmitPending } from './call-approvals.js';
import { CallKeys, idempotencyKey } from './call-keys.js';
import { CallLimits } from './call-limits.js';
import { checkOutput } from './check-output.js';
import type { ExecutorContext } from './executor-context.js';
import { runHttp } from './http-executor.js';
import { interruptedCall } from './interrupted-call.js';
import { type FindEndpoint, McpExecutors } from './mcp-executor.js';
import { ScriptExecutors } from './script-executor.js';
import { SecretRedactor } from './secret-redactor.js';
import { runSubprocess, subprocessArgs } from './subprocess-executor.js';
import { inputShape } from './tool-shapes.js';

/** Where an agent keeps its calls: its own database. */
export interface CallStore {
  saveCall(record: ToolCallRecord): Promise<void>;
  getCall(id: string): Promise<ToolCallRecord | undefined>;
  callsWithStatus(status: CallStatus): Promise<ToolCallRecord[]>;
  /** The latest call of `tool` that ran or waited under idempotency key `key`. */
  callWithKey(tool: string, key: string): Promise<ToolCallRecord | undefined>;
  /** Makes `callId` the latest call of `tool` under `key`. */
  claimKey(tool: string, key: string, callId: string): Promise<void>;
  /** Saves a record within `delayMs`, with other writes that wait; every read of the store sees it at once. */
  saveCallSoon?(record: ToolCallRecord, delayMs: number): Promise<void>;
}

export interface ToolCallerOptions {
  agent: string;
  /** The tools the agent's capabilities grant, by name. */
  tools: Readonly<Record<string, Tool>>;
  gate: RuntimeGate;
  calls: CallStore;
  /** Stores memories whatever the agent's mode (a Listening agent's read-only calls are remembered too). */
  remember(memories: NewMemory[]): Promise<unknown>;
  world: ExecutorContext['world'];
  allowAdmin: boolean;
  /** How long a `confirm` call waits for approval (`[tools] approval_timeout_s`). */
  approvalTimeoutS: number;
  /** How many calls may wait for approval at once (`[tools] max_pending`). */
  maxPending: number;
  /** How many agents a chain of Mcp calls may pass through (`[tools] max_hops`). */
  maxHops: number;
  /**
   * Within how long the record of a `read_only` call (not one that waits for approval) is
   * stored after it answers, in one write with the call's memory (`[tools] record_reads_within_ms`);
   * 0: before it answers, as every other call's. `get_call` finds it at once either way.
   */
  recordReadsWithinMs?: number;
  /** A Script worker's heap limit in MB, and the most workers of one Script module (`[tools] script_memory_mb`, `script_threads`). */
  scripts?: { memoryMb: number; maxThreads: number };
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/** Who asks for a call, and how they may cancel it. */
export interface CallRequest {
  caller: string;
  signal?: AbortSignal | undefined;
  /** The caller's idempotency key (MCP: `_meta["thymos/idempotency_key"]`), used when the tool declares no `idempotencyKey`. */
  idempotencyKey?: string | undefined;
  /** The agents a chain of Mcp calls passed through before this one (MCP: `_meta["thymos/chain"]`). */
  chain?: readonly string[] | undefined;
}

/** What runs a call, by the executor's kind (Mcp keeps sessions and Script its workers, so each ToolCaller has its own). */
const EXECUTORS: Record<
  Exclude<Tool['executor']['kind'], 'mcp' | 'script'>,
  (tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext) => Promise<unknown>
> = {
  http: runHttp,
  subprocess: runSubprocess,
};

const RECORD_TEXT_MAX = 600;
const SCRIPT_DEFAULTS = {
  memoryMb: ToolsSettingsSchema.shape.script_memory_mb.parse(undefined),
  maxThreads: ToolsSettingsSchema.shape.script_threads.parse(undefined),
};
/** The shortest secret a tool sends: a shorter one would be found (and replaced) all over ordinary text. */
const SECRET_MIN_CHARS = 8;
const RECENT_CALLS = 50;
/** The most a call waiting for approval may carry in arguments: the supervisor keeps them, and a person reads them. */
const PENDING_ARGUMENTS_MAX_BYTES = 64 * 1024;

/**
 * The one governed path of a declared tool's call: validate the input, check the reason,
 * check permission and mode (a Listening agent runs only read-only tools; `admin` tools only
 * with `[tools] allow_admin`), run the executor within its timeout and output limit, and
 * record the call — in the agent's database and as a `tool_call` memory, with the value of
 * every secret its tools use removed. A call with side effects is saved as `running` before the
 * executor starts (after a crash it is found `interrupted`: see `interruptedCall`) and as it ends, before
 * it answers; a read-only one only as it ends, written behind (`recordReadsWithinMs`).
 */
export class ToolCaller {
  readonly #o: ToolCallerOptions;
  readonly #inputs = new Map<string, z.ZodObject>();
  readonly #redactor: SecretRedactor;
  readonly #approvals: CallApprovals;
  readonly #keys: CallKeys;
  readonly #limits = new CallLimits();
  readonly #mcp: McpExecutors;
  readonly #scripts: ScriptExecutors;
  readonly #listeners = new Set<(record: ToolCallRecord) => void>();
  #recent: ToolCallRecord[] = [];
  readonly #counts = new Map<string, number>();

  constructor(options: ToolCallerOptions) {
    this.#o = options;
    this.#redactor = new SecretRedactor(Object.values(options.tools), options.env);
    this.#keys = new CallKeys(options.calls);
    this.#mcp = new McpExecutors(options.agent);
    this.#scripts = new ScriptExecutors(Object.values(options.tools), {
      ...(options.scripts ?? SCRIPT_DEFAULTS),
      redact: (text) => this.redact(text),
    });
    this.#approvals = new CallApprovals({
      agent: options.agent,
      tools: options.tools,
      gate: options.gate,
      logger: options.logger,
      allowAdmin: options.allowAdmin,
      callsWithStatus: (status) => options.calls.callsWithStatus(status),
      getCall: (id) => options.calls.getCall(id),
      save: (record) => this.#save(record),
      refuse: (record, tool, error) => this.#finish(record, tool, { status: 'refused', error }, 0),
      markDone: (record, tool) => this.#finish({ ...record, marked_done: true }, tool, { status: 'ok', result: null }, 0),
      run: async (tool, record) => {
        try {
          this.#validate(record.tool, tool, { ...record.arguments, ...(record.reason !== undefined ? { reason: record.reason } : {}) });
        } catch (err) {
          return this.#finish(record, tool, { status: 'refused', error: toThymosError(err) }, 0);
        }
        return this.#runAndFinish(tool, record);
      },
    });
  }

  /** Links the agent's approvals to the supervisor (see `CallApprovals`), and its Mcp tools to the other agents. */
  link(submit: SubmitPending, find: FindEndpoint): Promise<void> {
    this.#mcp.link(find);
    return this.#approvals.link(submit);
  }

  /** A person's decision on a pending call, from the supervisor (see `CallApprovals.decide`). */
  decide(callId: string, decision: ApprovalDecision): Promise<ToolCallRecord> {
    return this.#approvals.decide(callId, decision);
  }

  /** Runs the approved calls the agent's mode allows now. */
  runApproved(): Promise<void> {
    return this.#approvals.runApproved();
  }

  /** Stops handing pending calls to the supervisor (the agent is stopping). */
  close(): void {
    this.#approvals.close();
    void this.#mcp.close();
    void this.#scripts.close();
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
  async #save(record: ToolCallRecord, when: 'now' | 'soon' | 'not' = 'now'): Promise<void> {
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

  /** The calls waiting for approval, then the latest of this run (at most 50), newest first. */
  async calls(): Promise<{ pending: ToolCallRecord[]; recent: ToolCallRecord[] }> {
    const pending = (await this.#o.calls.callsWithStatus('pending')).sort((a, b) => b.requested_at.localeCompare(a.requested_at));
    return { pending, recent: this.#recent };
  }

  get tools(): Readonly<Record<string, Tool>> {
    return this.#o.tools;
  }

  /** Removes the value of every secret the agent's tools use from `value` (deeply). */
  redact<T>(value: T): T {
    return this.#redactor.redact(value);
  }

  /** Marks calls cut off by a crash (`running` when the agent starts) `interrupted`, to run again or wait for a person (`interruptedCall`); returns how many. */
  async recover(): Promise<number> {
    const cut = await this.#o.calls.callsWithStatus('running');
    for (const r of cut)
      await this.#o.calls.saveCall(
        interruptedCall(r, Object.hasOwn(this.#o.tools, r.tool) ? this.#o.tools[r.tool] : undefined, new Date(), this.#o.approvalTimeoutS),
      );
    return cut.length;
  }

  getCall(id: string): Promise<ToolCallRecord | undefined> {
    return this.#o.calls.getCall(id);
  }

  /** Runs one call through the governed path; the record says how it ended (a refused or failed call is a record too). */
  async call(name: string, args: Record<string, unknown>, request: CallRequest): Promise<ToolCallRecord> {
    return this.#o.gate.call(async () => {
      // Own tools only: `constructor` or `toString` is no tool, whatever an object inherits.
      const tool = Object.hasOwn(this.#o.tools, name) ? this.#o.tools[name] : undefined;
      if (!tool)
        throw new ThymosError(
          ErrorCode.NOT_FOUND,
          `${this.#o.agent} has no tool ${JSON.stringify(name)}; its tools: ${Object.keys(this.#o.tools).join(', ') || 'none granted'}`,
          { location: { path: 'name' } },
        );
      const { reason, ...input } = this.#validate(name, tool, args);
      const callId = randomUUID();
      const record: ToolCallRecord = {
        call_id: callId,
        agent: this.#o.agent,
        tool: name,
        arguments: input,
        ...(typeof reason === 'string' ? { reason } : {}),
        caller: request.caller,
        status: 'running',
        requested_at: new Date().toISOString(),
        idempotency_key: idempotencyKey(tool, input, callId, request.idempotencyKey),
        ...(request.chain?.length ? { chain: [...request.chain] } : {}),
      };
      // Refused before an earlier call's outcome is looked for: a caller that may not run the tool now does not read one either.
      const refusal = this.#refusal(name, tool, record.chain ?? []);
      if (refusal) return this.#finish(record, tool, { error: refusal, status: 'refused' }, 0);
      return this.#keys.once(tool, record, (keyed) =>
        tool.permission === 'confirm' ? this.#await(keyed, tool) : this.#runAndFinish(tool, keyed, request.signal),
      );
    });
  }

  /**
   * Runs the call within its timeout, which counts from here: its turn under the tool's limits,
   * then the executor. Saved as running only once its turn comes (a call that never got one is
   * refused, and a crash while it waits leaves nothing interrupted).
   */
  async #runAndFinish(tool: Tool, record: ToolCallRecord, callerSignal?: AbortSignal): Promise<ToolCallRecord> {
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new ThymosError(ErrorCode.TOOL_TIMEOUT, `${record.tool} did not finish within ${tool.timeoutMs} ms (timeoutMs)`)),
      tool.timeoutMs,
    );
    const signal = AbortSignal.any([timeout.signal, this.#o.gate.signal(), ...(callerSignal ? [callerSignal] : [])]);
    const deadline = Date.now() + tool.timeoutMs;
    try {
      return await this.#limits.take(
        record.tool,
        tool,
        signal,
        () => this.#runNow(tool, record, signal, deadline),
        (error) => this.#finish(record, tool, { status: 'refused', error }, 0),
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** Saves the call as running, runs it, and records how it ended. */
  async #runNow(tool: Tool, record: ToolCallRecord, signal: AbortSignal, deadline: number): Promise<ToolCallRecord> {
    const running: ToolCallRecord = { ...record, status: 'running' };
    // Only a call that changes something is saved before it runs: a read-only one cut off by a crash left nothing to find out about.
    await this.#save(running, tool.sideEffect !== 'read_only' ? 'now' : 'not');
    const started = performance.now();
    let outcome: { status: CallStatus; result?: unknown; error?: ThymosError };
    try {
      outcome = { result: await this.#run(record.tool, tool, running, signal, deadline), status: 'ok' };
    } catch (err) {
      outcome = { error: toThymosError(err, ErrorCode.TOOL_FAILED), status: 'failed' };
    }
    // Recording is not part of the call: a failure to record never turns a call that ran into a failed one.
    return this.#finish(running, tool, outcome, performance.now() - started);
  }

  /**
   * A `confirm` call: kept as `pending` in the agent's database with its deadline, and handed to
   * the supervisor, where a person approves or refuses it. It answers at once with the record.
   */
  async #await(record: ToolCallRecord, tool: Tool): Promise<ToolCallRecord> {
    if (Buffer.byteLength(JSON.stringify(record.arguments)) > PENDING_ARGUMENTS_MAX_BYTES) {
      throw new ThymosError(
        ErrorCode.INVALID_INPUT,
        `arguments of ${record.tool}: over ${PENDING_ARGUMENTS_MAX_BYTES} bytes, too large for a call that waits for a person's approval`,
        { location: { path: 'arguments' } },
      );
    }
    const waiting = (await this.#o.calls.callsWithStatus('pending')).length;
    if (waiting >= this.#o.maxPending)
      return this.#finish(
        record,
        tool,
        {
          status: 'refused',
          error: new ThymosError(
            ErrorCode.TOOL_DENIED,
            `${this.#o.agent} has ${waiting} calls waiting for approval already ([tools] max_pending = ${this.#o.maxPending})`,
          ),
        },
        0,
      );
    const pending: ToolCallRecord = {
      ...record,
      status: 'pending',
      expires_at: new Date(Date.parse(record.requested_at) + this.#o.approvalTimeoutS * 1000).toISOString(),
    };
    await this.#save(pending);
    // Handed in before the caller hears "pending", so the supervisor lists it by then (a failure is tried again within 10 s).
    await this.#approvals.hand(pending);
    return (await this.#o.calls.getCall(pending.call_id)) ?? pending;
  }

  #validate(name: string, tool: Tool, args: Record<string, unknown>): Record<string, unknown> {
    let schema = this.#inputs.get(name);
    if (!schema) this.#inputs.set(name, (schema = z.object(inputShape(tool)).strict()));
    const parsed = schema.safeParse(args);
    if (!parsed.success) {
      throw new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${name}: ${describeIssues(parsed.error, args)}`, {
        location: { path: ['arguments', ...(parsed.error.issues[0]?.path ?? []).map(String)].join('.') },
      });
    }
    const input = parsed.data as Record<string, unknown>;
    // Where an Http call would go, and a program's arguments, are settled before anything is saved or waits for approval.
    if (tool.executor.kind === 'subprocess') subprocessArgs(name, tool.executor, input);
    if (tool.executor.kind === 'http') {
      try {
        fillUrl(parseUrlTemplate(tool.executor.url), input);
      } catch (err) {
        if (err instanceof UrlInputError)
          throw new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${name}: ${err.message}`, {
            location: { path: `arguments.${err.field}` },
          });
        throw err;
      }
    }
    return input;
  }

  /** Why this call may not run now, or undefined. */
  #refusal(name: string, tool: Tool, chain: readonly string[]): ThymosError | undefined {
    if (tool.executor.kind === 'mcp' && tool.executor.agent != null) {
      const path = [...chain, this.#o.agent];
      const shown = [...path, tool.executor.agent].join(' → ');
      if (path.includes(tool.executor.agent))
        return new ThymosError(
          ErrorCode.TOOL_DENIED,
          `${name} would call ${tool.executor.agent}, which this chain of calls passed through already (${shown}): refused rather than looped`,
        );
      if (path.length + 1 > this.#o.maxHops)
        return new ThymosError(
          ErrorCode.TOOL_DENIED,
          `${name} would make a chain of ${path.length + 1} agents (${shown}); [tools] max_hops is ${this.#o.maxHops}`,
        );
    }
    if (tool.permission === 'admin' && !this.#o.allowAdmin)
      return new ThymosError(ErrorCode.TOOL_DENIED, `${name} is an admin tool; it runs only with [tools] allow_admin = true`);
    if (tool.sideEffect !== 'read_only' && !this.#o.gate.isActive())
      return new ThymosError(
        ErrorCode.AGENT_NOT_ACTIVE,
        `${this.#o.agent} is listening (passive): it runs only read-only tools now, and ${name} is ${tool.sideEffect}`,
      );
    return undefined;
  }

  async #run(name: string, tool: Tool, record: ToolCallRecord, signal: AbortSignal, deadline: number): Promise<unknown> {
    const ctx: ExecutorContext = {
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
      redact: (value) => this.redact(value),
      world: this.#o.world,
    };
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
    return checkOutput(name, tool, this.redact(result));
  }

  async #finish(
    record: ToolCallRecord,
    tool: Tool | undefined,
    outcome: { status: CallStatus; result?: unknown; error?: ThymosError },
    ms: number,
  ): Promise<ToolCallRecord> {
    const done: ToolCallRecord = this.redact({
      ...record,
      status: outcome.status,
      finished_at: new Date().toISOString(),
      duration_ms: Math.round(ms),
      ...(outcome.result !== undefined ? { result: outcome.result } : {}),
      ...(outcome.error ? { error: outcome.error.toJSON() } : {}),
    });
    // A read-only call that did not wait for a person is written behind with its memory: repeating it changes nothing, so a crash before the write loses only its record.
    await this.#save(
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
