import { z } from 'zod';

import { AgentIdSchema } from '../domain/domain-schema.js';
import { WireErrorSchema } from '../errors/errors.js';

/**
 * Where a call of a declared tool stands: `pending` waits for approval at the supervisor;
 * `running` has started; `interrupted` was cut off by a crash (found `running` when the agent
 * started again): whether the service did it is not known, so it runs again by itself only when
 * its tool says the service honours its idempotency key (`keyHonoured`), and otherwise waits for
 * a person to run it again, mark it done or refuse it (see `interrupted_at`); `ok` and `failed`
 * ran (or a person said it took effect: `marked_done`); `refused` was not run (again): not
 * allowed, its approval refused or timed out.
 */
export const CallStatusSchema = z.enum(['pending', 'running', 'ok', 'failed', 'refused', 'interrupted']);
export type CallStatus = z.infer<typeof CallStatusSchema>;

/** Where a caller puts its own idempotency key in an MCP `tools/call` request: `params._meta["thymos/idempotency_key"]`. */
export const IDEMPOTENCY_META = 'thymos/idempotency_key';

/**
 * Where a chain of agent calls says which agents it passed through, first first:
 * `params._meta["thymos/chain"]`. An Mcp call to an agent already in it, or past `[tools]
 * max_hops`, is refused.
 */
export const CHAIN_META = 'thymos/chain';

/** The agents a chain of calls passed through (at most 64: it is refused long before). */
export const CallChainSchema = z.array(AgentIdSchema).max(64);

/** An idempotency key a caller gives: visible ASCII, fit for an HTTP header, neither a job's (`job:…`) nor holding `~`. */
export const IdempotencyKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'expected an idempotency key: 1 to 255 visible ASCII characters')
  .refine((k) => !k.startsWith('job:'), 'keys that begin "job:" are those of the jobs a worker makes its calls under; choose another')
  .refine(
    (k) => !k.includes('~'),
    'a key may not hold "~": "key~2", "key~3"… are the later generations of a key past its tool\'s keyExpiresAfterS; choose another',
  );

/** One call of a declared tool, as the agent keeps it and `get_call` answers. */
export const ToolCallRecordSchema = z.object({
  call_id: z.string(),
  agent: z.string(),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  reason: z.string().optional(),
  /** Who asked: `mcp:<client name>`, an agent id, … */
  caller: z.string(),
  status: CallStatusSchema,
  requested_at: z.string(),
  finished_at: z.string().optional(),
  duration_ms: z.number().optional(),
  idempotency_key: z.string(),
  result: z.unknown().optional(),
  error: WireErrorSchema.optional(),
  /** A pending call's deadline: unanswered by then (`[tools] approval_timeout_s`), it is refused. */
  expires_at: z.string().optional(),
  /** Who approved or refused it, and why. */
  decided_by: z.string().optional(),
  decision_reason: z.string().optional(),
  /** The agents a chain of Mcp calls passed through before this call, first first. */
  chain: z.array(z.string()).optional(),
  /**
   * When a crash was found to have cut the call off. While its status is `interrupted` and no
   * decision is recorded, it waits for a person; each crash that cuts it off is a new question.
   */
  interrupted_at: z.string().optional(),
  /** A person said the interrupted call took effect: it is `ok` without having run again (`decision_reason` says why). */
  marked_done: z.boolean().optional(),
  /** Set on an answer, never saved: this is an earlier call with the same idempotency key, and nothing ran now. */
  replayed: z.boolean().optional(),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecordSchema>;

/** A person's answer to a pending call, as the supervisor hands it to the agent. */
export const ApprovalDecisionSchema = z.object({
  approved: z.boolean(),
  /**
   * With `approved`, for an interrupted call only: the person says it took effect, so it is
   * recorded `ok` (`marked_done`) and not run again.
   */
  done: z.boolean().optional(),
  /** Who decided (`Thymos-By` of the request), or `thymos` when the call timed out. */
  by: z.string().min(1),
  reason: z.string().min(1).max(2000),
  at: z.string(),
});
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/** What an approval or a refusal did: the decision and whether the agent has it yet (a Dormant agent gets it when it wakes). */
export const CallDecisionReportSchema = z.object({
  call_id: z.string(),
  agent: z.string(),
  tool: z.string(),
  decision: z.enum(['approved', 'done', 'refused']),
  delivered: z.boolean(),
});
export type CallDecisionReport = z.infer<typeof CallDecisionReportSchema>;
