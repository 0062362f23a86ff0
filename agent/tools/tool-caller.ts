import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import { keyFields, type Tool } from '../../shared/domain/tool-schema.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/errors.js';
import { describeIssues } from '../../shared/errors/zod-issues.js';
import type { Logger } from '../../shared/platform/logger.js';
import type { ApprovalDecision, CallStatus, PendingCall, ToolCallRecord } from '../../shared/protocol/tool-call.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { RuntimeGate } from '../runtime/runtime-ports.js';
import type { ExecutorContext } from './executor-context.js';
import { runHttp } from './http-executor.js';
import { runScript } from './script-executor.js';
import { SecretRedactor } from './secret-redactor.js';
import { inputShape, outputShape } from './tool-shapes.js';

/** Where an agent keeps its calls: its own database. */
export interface CallStore {
  saveCall(record: ToolCallRecord): Promise<void>;
  getCall(id: string): Promise<ToolCallRecord | undefined>;
  callsWithStatus(status: CallStatus): Promise<ToolCallRecord[]>;
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
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/** Hands a pending call to the supervisor; resolves with the decision when one was made already (decided while the agent slept). */
export type SubmitPending = (call: PendingCall) => Promise<ApprovalDecision | null>;

/** Who asks for a call, and how they may cancel it. */
export interface CallRequest {
  caller: string;
  signal?: AbortSignal | undefined;
}

const RECORD_TEXT_MAX = 600;
const RECENT_CALLS = 50;

/**
 * The one governed path of a declared tool's call: validate the input, check the reason,
 * check permission and mode (a Listening agent runs only read-only tools; `admin` tools only
 * with `[tools] allow_admin`), run the executor within its timeout and output limit, and
 * record the call — in the agent's database and as a `tool_call` memory, with the value of
 * every secret its tools use removed. The call is saved as `running` before the executor
 * starts: after a crash it is found `interrupted`, not run again.
 */
export class ToolCaller {
  readonly #o: ToolCallerOptions;
  readonly #inputs = new Map<string, z.ZodObject>();
  readonly #redactor: SecretRedactor;
  #submit: SubmitPending | undefined;
  /** Approved calls being run now: a second pass over the pending ones skips them. */
  readonly #runningApproved = new Set<string>();
  readonly #listeners = new Set<(record: ToolCallRecord) => void>();
  #recent: ToolCallRecord[] = [];
  readonly #counts = new Map<string, number>();

  constructor(options: ToolCallerOptions) {
    this.#o = options;
    this.#redactor = new SecretRedactor(Object.values(options.tools), options.env);
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

  async #save(record: ToolCallRecord): Promise<void> {
    await this.#o.calls.saveCall(record);
    if (record.status !== 'running') this.#counts.set(`${record.tool} ${record.status}`, (this.#counts.get(`${record.tool} ${record.status}`) ?? 0) + 1);
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

  /** Marks calls cut off by a crash (`running` when the agent starts) as `interrupted`; returns how many. */
  async recover(): Promise<number> {
    const cut = await this.#o.calls.callsWithStatus('running');
    for (const r of cut) await this.#o.calls.saveCall({ ...r, status: 'interrupted', error: new ThymosError(ErrorCode.TOOL_FAILED, `${r.tool} was cut off by the agent stopping; whether it took effect is not known`).toJSON() });
    return cut.length;
  }

  getCall(id: string): Promise<ToolCallRecord | undefined> {
    return this.#o.calls.getCall(id);
  }

  /** Runs one call through the governed path; the record says how it ended (a refused or failed call is a record too). */
  async call(name: string, args: Record<string, unknown>, request: CallRequest): Promise<ToolCallRecord> {
    return this.#o.gate.call(async () => {
      const tool = this.#o.tools[name];
      if (!tool) throw new ThymosError(ErrorCode.NOT_FOUND, `${this.#o.agent} has no tool ${JSON.stringify(name)}; its tools: ${Object.keys(this.#o.tools).join(', ') || 'none granted'}`, { location: { path: 'name' } });
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
        idempotency_key: idempotencyKey(tool, input, callId),
      };
      const refusal = this.#refusal(name, tool);
      if (refusal) return this.#finish(record, tool, { error: refusal, status: 'refused' }, 0);
      if (tool.permission === 'confirm') return this.#await(record);
      return this.#runAndFinish(tool, record, request.signal);
    });
  }

  /** Saves the call as running, runs it, and records how it ended. */
  async #runAndFinish(tool: Tool, record: ToolCallRecord, signal?: AbortSignal): Promise<ToolCallRecord> {
    const running: ToolCallRecord = { ...record, status: 'running' };
    await this.#save(running);
    const started = performance.now();
    try {
      const result = await this.#run(record.tool, tool, running, signal);
      return await this.#finish(running, tool, { result, status: 'ok' }, performance.now() - started);
    } catch (err) {
      return this.#finish(running, tool, { error: toThymosError(err, ErrorCode.TOOL_FAILED), status: 'failed' }, performance.now() - started);
    }
  }

  /**
   * A `confirm` call: kept as `pending` in the agent's database with its deadline, and handed to
   * the supervisor, where a person approves or refuses it. It answers at once with the record.
   */
  async #await(record: ToolCallRecord): Promise<ToolCallRecord> {
    const pending: ToolCallRecord = { ...record, status: 'pending', expires_at: new Date(Date.parse(record.requested_at) + this.#o.approvalTimeoutS * 1000).toISOString() };
    await this.#save(pending);
    void this.#hand(pending);
    return pending;
  }

  /** Hands a pending call to the supervisor and applies a decision that was made already; a failure waits for the next link. */
  async #hand(record: ToolCallRecord): Promise<void> {
    if (!this.#submit) return;
    try {
      const decision = await this.#submit(pendingCall(record));
      if (decision) await this.decide(record.call_id, decision);
    } catch (err) {
      this.#o.logger.warn({ call: record.call_id, err: (err as Error).message }, 'pending call not handed to the supervisor yet; handed again when the agent links');
    }
  }

  /**
   * Links the agent's approvals to the supervisor: every call still pending is handed over
   * (again: the supervisor keeps each once), and a decision made while the agent slept is applied.
   */
  async link(submit: SubmitPending): Promise<void> {
    this.#submit = submit;
    for (const r of await this.#o.calls.callsWithStatus('pending')) {
      if (r.decided_by === undefined) await this.#hand(r);
    }
    await this.runApproved();
  }

  /**
   * A person's decision on a pending call. A refusal ends it; an approval runs it now when the
   * agent may (a tool with side effects waits until the agent is Active), in the background:
   * the record answered is the call as it stands, and `get_call` or the calls resource tell
   * the rest. A decision on a call no longer pending changes nothing, so one delivered twice
   * runs nothing twice.
   */
  async decide(callId: string, decision: ApprovalDecision): Promise<ToolCallRecord> {
    const record = await this.#o.calls.getCall(callId);
    if (!record) throw new ThymosError(ErrorCode.NOT_FOUND, `${this.#o.agent} has no call ${JSON.stringify(callId)}`, { location: { path: 'call_id' } });
    if (record.status !== 'pending' || record.decided_by !== undefined) return record;
    const decided: ToolCallRecord = { ...record, decided_by: decision.by, decision_reason: decision.reason };
    const tool = this.#o.tools[record.tool];
    if (!tool) return this.#finish(decided, undefined, { status: 'refused', error: new ThymosError(ErrorCode.TOOL_DENIED, `${record.tool} is no longer granted to ${this.#o.agent}`) }, 0);
    if (!decision.approved) return this.#finish(decided, tool, { status: 'refused', error: new ThymosError(ErrorCode.TOOL_DENIED, `${record.tool} was refused by ${decision.by}: ${decision.reason}`) }, 0);
    if (record.expires_at && Date.parse(decision.at) > Date.parse(record.expires_at)) {
      return this.#finish(decided, tool, { status: 'refused', error: new ThymosError(ErrorCode.TOOL_DENIED, `${record.tool} was approved after its deadline ${record.expires_at}`) }, 0);
    }
    await this.#save(decided);
    void this.runApproved();
    return decided;
  }

  /** Runs the approved calls that wait, those the agent's mode allows now. */
  async runApproved(): Promise<void> {
    for (const r of await this.#o.calls.callsWithStatus('pending')) {
      const tool = this.#o.tools[r.tool];
      if (r.decided_by === undefined || !tool || this.#runningApproved.has(r.call_id) || (tool.sideEffect !== 'read_only' && !this.#o.gate.isActive())) continue;
      this.#runningApproved.add(r.call_id);
      await this.#o.gate
        .call(() => this.#runAndFinish(tool, r))
        .catch((err: unknown) => this.#o.logger.warn({ call: r.call_id, err: (err as Error).message }, 'approved call not run'))
        .finally(() => this.#runningApproved.delete(r.call_id));
    }
  }

  #validate(name: string, tool: Tool, args: Record<string, unknown>): Record<string, unknown> {
    let schema = this.#inputs.get(name);
    if (!schema) this.#inputs.set(name, (schema = z.object(inputShape(tool)).strict()));
    const parsed = schema.safeParse(args);
    if (!parsed.success) {
      throw new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${name}: ${describeIssues(parsed.error, args)}`, { location: { path: ['arguments', ...(parsed.error.issues[0]?.path ?? []).map(String)].join('.') } });
    }
    return parsed.data as Record<string, unknown>;
  }

  /** Why this call may not run now, or undefined. */
  #refusal(name: string, tool: Tool): ThymosError | undefined {
    if (tool.permission === 'admin' && !this.#o.allowAdmin) return new ThymosError(ErrorCode.TOOL_DENIED, `${name} is an admin tool; it runs only with [tools] allow_admin = true`);
    if (tool.sideEffect !== 'read_only' && !this.#o.gate.isActive()) return new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, `${this.#o.agent} is listening (passive): it runs only read-only tools now, and ${name} is ${tool.sideEffect}`);
    return undefined;
  }

  async #run(name: string, tool: Tool, record: ToolCallRecord, callerSignal: AbortSignal | undefined): Promise<unknown> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new ThymosError(ErrorCode.TOOL_TIMEOUT, `${name} did not finish within ${tool.timeoutMs} ms (timeoutMs)`)), tool.timeoutMs);
    const signal = AbortSignal.any([timeout.signal, this.#o.gate.signal(), ...(callerSignal ? [callerSignal] : [])]);
    const ctx: ExecutorContext = {
      tool: name,
      agent: this.#o.agent,
      caller: record.caller,
      reason: record.reason,
      callId: record.call_id,
      idempotencyKey: record.idempotency_key,
      signal,
      secret: (env) => {
        const value = this.#o.env[env];
        if (!value) throw new ThymosError(ErrorCode.TOOL_FAILED, `${name}: the environment variable ${env} that holds its secret is not set in the agent's environment`);
        return value;
      },
      world: this.#o.world,
    };
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason as Error);
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
    aborted.catch(() => undefined);
    try {
      const result = await Promise.race([tool.executor.kind === 'http' ? runHttp(tool, record.arguments, ctx) : runScript(tool, record.arguments, ctx), aborted]);
      return checkOutput(name, tool, result);
    } finally {
      clearTimeout(timer);
    }
  }

  async #finish(record: ToolCallRecord, tool: Tool | undefined, outcome: { status: CallStatus; result?: unknown; error?: ThymosError }, ms: number): Promise<ToolCallRecord> {
    const done: ToolCallRecord = this.redact({
      ...record,
      status: outcome.status,
      finished_at: new Date().toISOString(),
      duration_ms: Math.round(ms),
      ...(outcome.result !== undefined ? { result: outcome.result } : {}),
      ...(outcome.error ? { error: outcome.error.toJSON() } : {}),
    });
    await this.#save(done);
    await this.#o.remember([{ id: `call_${done.call_id}`, content: recordText(done), tags: ['tool_call', done.tool, ...(tool?.tags ?? [])], importance: 0.5, source: { kind: 'tool_call', by: done.caller } }]);
    this.#o.logger.info({ tool: done.tool, call: done.call_id, caller: done.caller, status: done.status, ms: done.duration_ms, ...(done.error ? { code: done.error.code } : {}) }, 'tool call');
    return done;
  }
}

/** What the supervisor keeps of a pending call. */
function pendingCall(r: ToolCallRecord): PendingCall {
  const { call_id, agent, tool, arguments: args, reason, caller, requested_at, expires_at } = r;
  return { call_id, agent, tool, arguments: args, ...(reason !== undefined ? { reason } : {}), caller, requested_at, expires_at: expires_at! };
}

/** The call's idempotency key: the tool's template filled from the input, else the call id. */
function idempotencyKey(tool: Tool, input: Record<string, unknown>, callId: string): string {
  if (!tool.idempotencyKey) return callId;
  let key = tool.idempotencyKey;
  for (const f of keyFields(tool.idempotencyKey)) key = key.replaceAll(`{${f}}`, input[f] === undefined ? '' : typeof input[f] === 'string' ? input[f] : JSON.stringify(input[f]));
  return key;
}

/** The result within the declared `output` (and the output limit, for what a Script returns). */
function checkOutput(name: string, tool: Tool, result: unknown): unknown {
  const size = Buffer.byteLength(typeof result === 'string' ? result : (JSON.stringify(result) ?? ''));
  if (size > tool.outputLimitBytes) throw new ThymosError(ErrorCode.TOOL_OUTPUT_TOO_LARGE, `${name}: the result is ${size} bytes, over ${tool.outputLimitBytes} (outputLimitBytes)`, { details: { limit: tool.outputLimitBytes } });
  const shape = outputShape(tool);
  if (!shape) return result ?? null;
  const parsed = z.object(shape).safeParse(result);
  if (!parsed.success) throw new ThymosError(ErrorCode.TOOL_OUTPUT_INVALID, `${name}: the result does not match its declared output: ${describeIssues(parsed.error, result)}`);
  return parsed.data;
}

/** The sentence a call is remembered by: what, with what, for whom, why, and how it ended. */
function recordText(r: ToolCallRecord): string {
  const clip = (s: string) => (s.length > RECORD_TEXT_MAX ? `${s.slice(0, RECORD_TEXT_MAX)}…` : s);
  const ended = r.status === 'ok' ? `ok: ${clip(typeof r.result === 'string' ? r.result : JSON.stringify(r.result))}` : `${r.status}: ${r.error ? `${r.error.code} ${clip(r.error.message)}` : ''}`;
  return `Tool call ${r.tool} ${clip(JSON.stringify(r.arguments))} for ${r.caller}${r.reason ? `, because ${r.reason}` : ''} — ${ended}`;
}
