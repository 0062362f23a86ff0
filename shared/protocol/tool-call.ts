import { z } from 'zod';

import { WireErrorSchema } from '../errors/errors.js';

/**
 * Where a call of a declared tool stands: `pending` waits for approval at the supervisor;
 * `running` has started (a call found running when the agent starts again was cut off by a
 * crash and becomes `interrupted`: whether the service did it is not known, and its
 * idempotency key makes a retry safe where the service honours one); `ok` and `failed` ran;
 * `refused` never ran (not allowed, its approval refused or timed out).
 */
export const CallStatusSchema = z.enum(['pending', 'running', 'ok', 'failed', 'refused', 'interrupted']);
export type CallStatus = z.infer<typeof CallStatusSchema>;

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
});
export type ToolCallRecord = z.infer<typeof ToolCallRecordSchema>;
