import type { Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ToolCallRecord } from '../../shared/protocol/index.js';

/** Who decides that a call cut off by a crash runs again when its service honours its key. */
export const BY_RULE = 'thymos';

/**
 * Why whether a call took effect is not known: a crash cut it off here, or another worker may
 * have made it (a job delivered again after a delivery this agent did not get).
 */
export type CutBy = 'crash' | 'elsewhere';

/**
 * What a call found `running` as the agent starts becomes: `interrupted`, since whether the
 * service did it is not known; so does a call of a job delivered again that another worker may
 * have made (`cutBy` `elsewhere`). Its tool's service honours the idempotency key (`keyHonoured`):
 * it is approved by rule and runs again by itself under the same key, as soon as the agent may
 * (Active, for a tool with side effects); should that happen twice, the service does it once.
 * Otherwise it waits for a person (`thymos approvals`) for `approvalTimeoutS`: run it again
 * (approve), say it took effect (`done`), or refuse it; run twice, the side effect may happen
 * twice, which is why a person decides. An earlier person's approval does not carry over: a call
 * approved, then cut off, is asked about anew, and so is one cut off again.
 */
export function interruptedCall(
  r: ToolCallRecord,
  tool: Tool | undefined,
  at: Date,
  approvalTimeoutS: number,
  cutBy: CutBy = 'crash',
): ToolCallRecord {
  const earlier = r.decided_by !== undefined ? ` (approved earlier by ${r.decided_by}: ${r.decision_reason ?? ''})` : '';
  const what =
    cutBy === 'crash'
      ? `${r.tool} was cut off by the agent stopping${earlier}`
      : `${r.tool} may have been made by another worker, which had an earlier delivery of its job and did not finish it`;
  const error = new ThymosError(ErrorCode.TOOL_FAILED, `${what}; whether it took effect is not known`).toJSON();
  const { decided_by: _by, decision_reason: _why, ...rest } = r;
  const expires_at = new Date(at.getTime() + approvalTimeoutS * 1000).toISOString();
  const cut: ToolCallRecord = { ...rest, status: 'interrupted', interrupted_at: at.toISOString(), expires_at, error };
  if (!tool?.keyHonoured) return cut;
  return {
    ...cut,
    decided_by: BY_RULE,
    decision_reason: `its service honours the idempotency key ${r.idempotency_key} (keyHonoured): run again under it`,
  };
}

/** Whether a call waits for a person to say what became of it after a crash. */
export function waitsAfterCrash(r: ToolCallRecord): boolean {
  return r.status === 'interrupted' && r.interrupted_at !== undefined && r.decided_by === undefined;
}

/** Whether a call is not over yet: waiting for a person, approved and not run, running, or cut off and to run again. */
export function unsettled(r: ToolCallRecord): boolean {
  return r.status === 'pending' || r.status === 'running' || (r.status === 'interrupted' && r.interrupted_at !== undefined);
}
