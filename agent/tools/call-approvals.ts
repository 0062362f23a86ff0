import type { Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { ApprovalDecision, CallStatus, PendingCall, ToolCallRecord } from '../../shared/protocol/index.js';
import type { RuntimeGate } from '../runtime/runtime-ports.js';
import { waitsAfterCrash } from './interrupted-call.js';

/** Hands a pending call to the supervisor; resolves with the decision when one was made already. */
export type SubmitPending = (call: PendingCall) => Promise<ApprovalDecision | null>;

/** How often pending calls are handed to the supervisor again while they wait: a lost hand-in or a lost decision is made good within it. */
const REHAND_EVERY_MS = 10_000;

/** What the approvals of an agent's calls need of its governed path. */
export interface ApprovalHost {
  agent: string;
  tools: Readonly<Record<string, Tool>>;
  gate: RuntimeGate;
  logger: Logger;
  allowAdmin: boolean;
  callsWithStatus(status: CallStatus): Promise<ToolCallRecord[]>;
  getCall(id: string): Promise<ToolCallRecord | undefined>;
  save(record: ToolCallRecord): Promise<void>;
  /** Ends a call without running it. */
  refuse(record: ToolCallRecord, tool: Tool | undefined, error: ThymosError): Promise<ToolCallRecord>;
  /** Ends an interrupted call `ok` without running it again: a person said it took effect. */
  markDone(record: ToolCallRecord, tool: Tool | undefined): Promise<ToolCallRecord>;
  /** Checks the recorded arguments again (the domain may have changed since the call was made), then runs and records the call. */
  run(tool: Tool, record: ToolCallRecord): Promise<ToolCallRecord>;
}

/**
 * The approvals side of an agent's calls. A `confirm` call is kept `pending` in the agent's
 * database and handed to the supervisor, again every 10 s while it waits (the supervisor keeps
 * each once and answers with its decision when one was made). A decision is applied once: a
 * refusal ends the call, an approval marks it and it runs when the agent may (a tool with side
 * effects waits until the agent is Active). Approved calls run one pass at a time, each re-read
 * before it runs, so none runs twice; a call past its deadline that no decision reached is
 * refused here too.
 *
 * A call cut off by a crash (see `interruptedCall`) goes the same way: handed in as interrupted
 * until a person decides, or approved by rule when its service honours its key. Approved, it runs
 * again; `done`, it is recorded `ok` without running; refused, it is left as it was, never run again.
 */
export class CallApprovals {
  readonly #host: ApprovalHost;
  #submit: SubmitPending | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The pass over approved calls running now, and whether another was asked for meanwhile. */
  #pass: Promise<void> | undefined;
  #again = false;

  constructor(host: ApprovalHost) {
    this.#host = host;
  }

  /** Links to the supervisor: hands every waiting call in now and every 10 s, and runs what was approved. */
  async link(submit: SubmitPending): Promise<void> {
    this.#submit = submit;
    clearInterval(this.#timer);
    this.#timer = setInterval(() => void this.#handAll(), REHAND_EVERY_MS);
    this.#timer.unref();
    await this.#handAll();
  }

  close(): void {
    clearInterval(this.#timer);
  }

  /** Hands one pending call to the supervisor and applies a decision made already; a failure is tried again later. */
  async hand(record: ToolCallRecord): Promise<void> {
    if (!this.#submit) return;
    try {
      const decision = await this.#submit(pendingCall(record));
      if (decision) await this.decide(record.call_id, decision);
    } catch (err) {
      this.#host.logger.warn(
        { call: record.call_id, err: (err as Error).message },
        'pending call not handed to the supervisor yet; tried again within 10 s',
      );
    }
  }

  async #handAll(): Promise<void> {
    for (const r of await this.#waiting()) {
      if (r.decided_by !== undefined) continue;
      if (r.expires_at && Date.parse(r.expires_at) <= Date.now()) {
        await this.decide(r.call_id, {
          approved: false,
          by: 'thymos',
          reason: `no decision by ${r.expires_at} ([tools] approval_timeout_s)`,
          at: new Date().toISOString(),
        }).catch(() => undefined);
      } else {
        await this.hand(r);
      }
    }
    await this.runApproved();
  }

  /**
   * A person's decision on a pending call. The record answered is the call as it stands; an
   * approved call then runs in the background (`get_call` and the calls resource tell the rest).
   * A decision on a call no longer waiting changes nothing.
   */
  async decide(callId: string, decision: ApprovalDecision): Promise<ToolCallRecord> {
    const h = this.#host;
    const record = await h.getCall(callId);
    if (!record)
      throw new ThymosError(ErrorCode.NOT_FOUND, `${h.agent} has no call ${JSON.stringify(callId)}`, { location: { path: 'call_id' } });
    const cut = waitsAfterCrash(record);
    if (!(record.status === 'pending' || cut) || record.decided_by !== undefined) return record;
    const decided: ToolCallRecord = { ...record, decided_by: decision.by, decision_reason: decision.reason };
    const tool = Object.hasOwn(h.tools, record.tool) ? h.tools[record.tool] : undefined;
    if (decision.done === true) {
      // Only a call that may have run can be said to have taken effect: one that waits for its first approval has not.
      if (!cut) return record;
      return h.markDone(decided, tool);
    }
    const again = cut ? ' (it was cut off by a crash: not run again, and whether it took effect is not known)' : '';
    if (!tool)
      return h.refuse(
        decided,
        undefined,
        new ThymosError(ErrorCode.TOOL_DENIED, `${record.tool} is no longer granted to ${h.agent}${again}`),
      );
    if (!decision.approved)
      return h.refuse(
        decided,
        tool,
        new ThymosError(ErrorCode.TOOL_DENIED, `${record.tool} was refused by ${decision.by}: ${decision.reason}${again}`),
      );
    if (record.expires_at && Date.parse(decision.at) > Date.parse(record.expires_at)) {
      return h.refuse(
        decided,
        tool,
        new ThymosError(ErrorCode.TOOL_DENIED, `${record.tool} was approved after its deadline ${record.expires_at}`),
      );
    }
    await h.save(decided);
    void this.runApproved();
    return decided;
  }

  /** Runs the approved calls the agent's mode allows now: one pass at a time; a pass asked for meanwhile runs after it. */
  runApproved(): Promise<void> {
    if (this.#pass) {
      this.#again = true;
      return this.#pass;
    }
    this.#pass = (async () => {
      do {
        this.#again = false;
        await this.#runPass().catch((err: unknown) => this.#host.logger.warn({ err: (err as Error).message }, 'approved calls not run'));
      } while (this.#again);
    })().finally(() => (this.#pass = undefined));
    return this.#pass;
  }

  /** The calls that wait for a decision or to run: pending, and interrupted by a crash since this rule (an older record says no `interrupted_at`). */
  async #waiting(): Promise<ToolCallRecord[]> {
    const [pending, cut] = await Promise.all(
      ['pending', 'interrupted'].map((s) => this.#host.callsWithStatus(s as CallStatus).catch(() => [])),
    );
    return [...pending!, ...cut!.filter((r) => r.interrupted_at !== undefined)];
  }

  async #runPass(): Promise<void> {
    const h = this.#host;
    for (const { call_id } of await this.#waiting()) {
      // Read again: only a call still approved and waiting runs (an interrupted one approved, by a person or by rule, runs again).
      const r = await h.getCall(call_id);
      const tool = r && Object.hasOwn(h.tools, r.tool) ? h.tools[r.tool] : undefined;
      if (
        !r ||
        !tool ||
        !(r.status === 'pending' || (r.status === 'interrupted' && r.interrupted_at !== undefined)) ||
        r.decided_by === undefined
      )
        continue;
      if (tool.permission === 'admin' && !h.allowAdmin) {
        await h.refuse(
          r,
          tool,
          new ThymosError(ErrorCode.TOOL_DENIED, `${r.tool} is an admin tool; it runs only with [tools] allow_admin = true`),
        );
        continue;
      }
      if (tool.sideEffect !== 'read_only' && !h.gate.isActive()) continue;
      await h.gate
        .call(() => h.run(tool, r))
        .catch((err: unknown) => {
          h.logger.warn({ call: call_id, err: toThymosError(err).message }, 'approved call not run now; tried again on the next pass');
        });
    }
  }
}

/** What the supervisor keeps of a pending call. */
function pendingCall(r: ToolCallRecord): PendingCall {
  const { call_id, agent, tool, arguments: args, reason, caller, requested_at, expires_at, interrupted_at } = r;
  return {
    call_id,
    agent,
    tool,
    arguments: args,
    ...(reason !== undefined ? { reason } : {}),
    caller,
    requested_at,
    expires_at: expires_at!,
    ...(interrupted_at !== undefined ? { interrupted_at } : {}),
  };
}
