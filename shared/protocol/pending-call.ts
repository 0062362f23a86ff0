import { z } from 'zod';

import { AgentIdSchema } from '../domain/domain-schema.js';
import { ToolNameSchema } from '../domain/tool-schema.js';

/** The most a call waiting for approval may carry in arguments, as JSON: the supervisor keeps them, and a person reads them. */
export const PENDING_ARGUMENTS_MAX_BYTES = 65_536;
/** The longest reason a waiting call may give (as long as a call's reason may be). */
export const PENDING_REASON_MAX = 2000;
/** The longest caller a waiting call may name (`Thymos-By` is at most 200, `reply:` before it). */
export const PENDING_CALLER_MAX = 256;

/** How many bytes `value` takes as JSON. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');

/** A call waiting at the supervisor, as `thymos approvals` lists it. */
export const PendingCallSchema = z.object({
  call_id: z.string().min(1).max(64),
  agent: AgentIdSchema,
  tool: ToolNameSchema,
  arguments: z
    .record(z.string(), z.unknown())
    .refine(
      (a) => jsonBytes(a) <= PENDING_ARGUMENTS_MAX_BYTES,
      `expected at most ${PENDING_ARGUMENTS_MAX_BYTES} bytes of JSON: a call that waits for approval is kept by the supervisor and read whole by a person`,
    ),
  reason: z.string().max(PENDING_REASON_MAX).optional(),
  caller: z.string().max(PENDING_CALLER_MAX),
  requested_at: z.iso.datetime({ offset: true }),
  expires_at: z.iso.datetime({ offset: true }),
  /**
   * Set when a crash cut the call off after it was approved or began to run, or when another
   * worker may have made it (a job delivered again): whether it took effect is not known. Approve
   * runs it again, `done` records that it took effect, refuse leaves it as it is. Each crash is a
   * new question, with its own time.
   */
  interrupted_at: z.iso.datetime({ offset: true }).optional(),
});
export type PendingCall = z.infer<typeof PendingCallSchema>;

/** Where a page of waiting calls ends, and the next begins: the last call listed (calls are listed by `requested_at`, then `call_id`). */
export const ApprovalsCursorSchema = z.object({ requested_at: z.string().min(1).max(64), call_id: z.string().min(1).max(64) }).strict();
export type ApprovalsCursor = z.infer<typeof ApprovalsCursorSchema>;

/**
 * One page of the calls waiting for approval, oldest first: as many as fit in one reply (at most
 * 512 KiB, and half the server's `max_payload`; one at least), each whole. `next` is where the
 * following page begins (ask again with `after: next`); null on the last page.
 */
export const ApprovalsPageSchema = z.object({
  calls: z.array(PendingCallSchema),
  next: ApprovalsCursorSchema.nullable(),
});
export type ApprovalsPage = z.infer<typeof ApprovalsPageSchema>;
