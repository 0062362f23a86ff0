import { randomUUID } from 'node:crypto';

import type { Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  type ApprovalDecision,
  type CallStatus,
  jsonBytes,
  PENDING_ARGUMENTS_MAX_BYTES,
  type ToolCallRecord,
} from '../../shared/protocol/index.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { RuntimeGate } from '../runtime/runtime-ports.js';
import { CallApprovals, type SubmitPending } from './call-approvals.js';
import { CallChecks } from './call-checks.js';
import { CallExecutors } from './call-executors.js';
import { CallKeys, idempotencyKey, keyedOnce } from './call-keys.js';
import { CallLimits } from './call-limits.js';
import { type CallOutcome, CallRecorder } from './call-recorder.js';
import type { CallStore } from './call-store.js';
import type { ExecutorContext } from './executor-context.js';
import { interruptedCall } from './interrupted-call.js';
import type { FindEndpoint } from './mcp-executor.js';
import { SecretRedactor } from './secret-redactor.js';

export interface ToolCallerOptions {
  agent: string;
  /** Run before every call (`CallExecutorsOptions.guard`). */
  guard?: (() => void) | undefined;
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
  /**
   * Another worker may have made this call under its key: a job delivered again after a delivery
   * this agent did not get (`JobDelivery.elsewhere`). See `ToolCaller.call`.
   */
  elsewhere?: boolean | undefined;
}

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
  readonly #redactor: SecretRedactor;
  readonly #checks: CallChecks;
  readonly #approvals: CallApprovals;
  readonly #keys: CallKeys;
  readonly #limits = new CallLimits();
  readonly #executors: CallExecutors;
  readonly #recorder: CallRecorder;

  constructor(options: ToolCallerOptions) {
    this.#o = options;
    this.#redactor = new SecretRedactor(Object.values(options.tools), options.env);
    const redact = <T>(value: T): T => this.redact(value);
    this.#checks = new CallChecks(options);
    this.#keys = new CallKeys(options.calls);
    this.#executors = new CallExecutors({ ...options, tools: Object.values(options.tools), redact });
    this.#recorder = new CallRecorder({ ...options, redact });
    this.#approvals = new CallApprovals({
      agent: options.agent,
      tools: options.tools,
      gate: options.gate,
      logger: options.logger,
      allowAdmin: options.allowAdmin,
      callsWithStatus: (status) => options.calls.callsWithStatus(status),
      getCall: (id) => options.calls.getCall(id),
      save: (record) => this.#recorder.save(record),
      refuse: (record, tool, error) => this.#finish(record, tool, { status: 'refused', error }),
      markDone: (record, tool) => this.#finish({ ...record, marked_done: true }, tool, { status: 'ok', result: null }),
      run: async (tool, record) => {
        try {
          this.#checks.validate(record.tool, tool, {
            ...record.arguments,
            ...(record.reason !== undefined ? { reason: record.reason } : {}),
          });
        } catch (err) {
          return this.#finish(record, tool, { status: 'refused', error: toThymosError(err) });
        }
        return this.#runAndFinish(tool, record);
      },
    });
  }

  /** Links the agent's approvals to the supervisor (see `CallApprovals`), and its Mcp tools to the other agents. */
  link(submit: SubmitPending, find: FindEndpoint): Promise<void> {
    this.#executors.link(find);
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
    this.#executors.close();
  }

  /** Calls `listener` with each call's record as it changes (pending, decided, running, ended); returns how to stop. */
  listen(listener: (record: ToolCallRecord) => void): () => void {
    return this.#recorder.listen(listener);
  }

  /** The calls of this process by tool and status (a call counts once, as it ends or waits). */
  counts(): Array<{ tool: string; status: CallStatus; count: number }> {
    return this.#recorder.counts();
  }

  /** The calls waiting for approval, then the latest of this run (at most 50), newest first. */
  async calls(): Promise<{ pending: ToolCallRecord[]; recent: ToolCallRecord[] }> {
    const pending = (await this.#o.calls.callsWithStatus('pending')).sort((a, b) => b.requested_at.localeCompare(a.requested_at));
    return { pending, recent: this.#recorder.recent };
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

  /**
   * Runs one call through the governed path; the record says how it ended (a refused or failed
   * call is a record too). With `request.elsewhere`, a call of a tool that writes outside the
   * agent which no record here answers under its key (see `CallKeys`) is not run: another worker
   * may have made it, so unless its service honours the key (`keyHonoured`: it runs, and the
   * service does it once) it waits for a person as interrupted (`#madeElsewhere`), as a call a
   * crash cut off here does. A read-only or `writes_local` call runs as on any delivery.
   */
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
      const { reason, ...input } = this.#checks.validate(name, tool, args);
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
      const refusal = this.#checks.refusal(name, tool, record.chain ?? []);
      if (refusal) return this.#finish(record, tool, { error: refusal, status: 'refused' });
      return this.#keys.once(tool, record, (keyed) => {
        if (request.elsewhere === true && !tool.keyHonoured && keyedOnce(tool, keyed)) return this.#madeElsewhere(keyed, tool);
        return tool.permission === 'confirm' ? this.#await(keyed, tool) : this.#runAndFinish(tool, keyed, request.signal);
      });
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
        (error) => this.#finish(record, tool, { status: 'refused', error }),
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** Saves the call as running, runs it, and records how it ended. */
  async #runNow(tool: Tool, record: ToolCallRecord, signal: AbortSignal, deadline: number): Promise<ToolCallRecord> {
    const running: ToolCallRecord = { ...record, status: 'running' };
    // Only a call that changes something is saved before it runs: a read-only one cut off by a crash left nothing to find out about.
    await this.#recorder.save(running, tool.sideEffect !== 'read_only' ? 'now' : 'not');
    const started = performance.now();
    let outcome: CallOutcome;
    try {
      outcome = { result: await this.#executors.run(tool, running, signal, deadline), status: 'ok' };
    } catch (err) {
      outcome = { error: toThymosError(err, ErrorCode.TOOL_FAILED), status: 'failed' };
    }
    // Recording is not part of the call: a failure to record never turns a call that ran into a failed one.
    return this.#recorder.finish(running, tool, outcome, performance.now() - started);
  }

  /**
   * A `confirm` call: kept as `pending` in the agent's database with its deadline, and handed to
   * the supervisor, where a person approves or refuses it. It answers at once with the record.
   */
  async #await(record: ToolCallRecord, tool: Tool): Promise<ToolCallRecord> {
    fitsApproval(record);
    const waiting = (await this.#o.calls.callsWithStatus('pending')).length;
    if (waiting >= this.#o.maxPending)
      return this.#finish(record, tool, {
        status: 'refused',
        error: new ThymosError(
          ErrorCode.TOOL_DENIED,
          `${this.#o.agent} has ${waiting} calls waiting for approval already ([tools] max_pending = ${this.#o.maxPending})`,
        ),
      });
    const pending: ToolCallRecord = {
      ...record,
      status: 'pending',
      expires_at: new Date(Date.parse(record.requested_at) + this.#o.approvalTimeoutS * 1000).toISOString(),
    };
    await this.#recorder.save(pending);
    // Handed in before the caller hears "pending", so the supervisor lists it by then (a failure is tried again within 10 s).
    await this.#approvals.hand(pending);
    return (await this.#o.calls.getCall(pending.call_id)) ?? pending;
  }

  /**
   * A call another worker may have made under the same key: whether it took effect is not known,
   * as for a call a crash cut off here, so it is recorded `interrupted` (`interruptedCall`) and
   * handed to the supervisor, where a person runs it, marks it done or refuses it; its job is
   * held meanwhile. Made again under its key, it answers as it stands (`CallKeys`): asked once.
   */
  async #madeElsewhere(record: ToolCallRecord, tool: Tool): Promise<ToolCallRecord> {
    fitsApproval(record);
    const cut = interruptedCall(record, tool, new Date(), this.#o.approvalTimeoutS, 'elsewhere');
    await this.#recorder.save(cut);
    this.#o.logger.info(
      { call: cut.call_id, tool: cut.tool, key: cut.idempotency_key },
      'another worker may have made this call: a person decides',
    );
    await this.#approvals.hand(cut);
    return (await this.#o.calls.getCall(cut.call_id)) ?? cut;
  }

  /** Ends a call that did not run (refused, or marked done by a person). */
  #finish(record: ToolCallRecord, tool: Tool | undefined, outcome: CallOutcome): Promise<ToolCallRecord> {
    return this.#recorder.finish(record, tool, outcome, 0);
  }
}

/** Refuses a call whose arguments are too large to wait for a person: the supervisor keeps them, and a person reads them whole. */
function fitsApproval(record: ToolCallRecord): void {
  if (jsonBytes(record.arguments) > PENDING_ARGUMENTS_MAX_BYTES)
    throw new ThymosError(
      ErrorCode.INVALID_INPUT,
      `arguments of ${record.tool}: over ${PENDING_ARGUMENTS_MAX_BYTES} bytes, too large for a call that waits for a person's approval`,
      { location: { path: 'arguments' } },
    );
}
