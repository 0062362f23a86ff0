import { z } from 'zod';

import { AgentIdSchema } from '../domain/domain-schema.js';
import { ToolNameSchema } from '../domain/tool-schema.js';
import { WireErrorSchema } from '../errors/errors.js';
import { ApprovalDecisionSchema, CallStatusSchema, ToolCallRecordSchema } from './tool-call.js';

/** `active` answers dialogue; `passive` (Listening) serves reads and hears events only. */
export const AgentModeSchema = z.enum(['active', 'passive']);
export type AgentMode = z.infer<typeof AgentModeSchema>;

/** What an agent says about itself: `get_<id>_state`, `agent://<id>/state`, control `get_state`, heartbeats. */
export const AgentStateSchema = z.object({
  id: AgentIdSchema,
  name: z.string(),
  /** False when the domain schema does not define this id and a default persona is used. */
  defined: z.boolean(),
  mode: AgentModeSchema,
  status: z.enum(['starting', 'ready', 'stopping']),
  pid: z.number().int(),
  port: z.number().int(),
  started_at: z.string(),
  nats: z.enum(['connected', 'disconnected', 'disabled']),
  memory_count: z.number().int(),
  conversations: z.number().int(),
  last_snapshot_at: z.string().nullable(),
  /** Calls to models, their tokens and what they cost (by `[llm.<use>]` prices), kept across restarts; absent when it made none. Offline answers are not counted. */
  llm: z.object({ calls: z.number().int(), input_tokens: z.number().int(), output_tokens: z.number().int(), cost: z.number() }).optional(),
  /** Its mood (the tone of its last reply) and what its replies changed (`state_changes`). */
  disposition: z.record(z.string(), z.unknown()).optional(),
});
export type AgentState = z.infer<typeof AgentStateSchema>;

/** An option a reasoning agent weighed: what, how well it fits (0..1), why. */
export const ScoredOptionSchema = z.object({ action: z.string(), score: z.number(), reason: z.string() });

/** One call of a model's tool loop, as it ended. */
export const ToolStepSchema = z.object({
  tool: z.string(),
  /** The governed call's id; none when the call was not made. */
  call_id: z.string().optional(),
  /** The call record's status, or `invalid` (could not run as written) or `not_run` (the budget was spent). */
  status: z.string(),
  code: z.string().optional(),
  ms: z.number(),
});

/** What an agent decided about a world event it heard, published on `<fleet>.agent.<id>.decision`. */
export const EventDecisionSchema = z.object({
  agent: AgentIdSchema,
  /** The world event's id. */
  event: z.string(),
  /** The event as the agent remembers it. */
  heard: z.string(),
  action: z.string(),
  confidence: z.number().min(0).max(1),
  reason: z.string(),
  steps: z.array(z.string()),
  options: z.array(ScoredOptionSchema),
  /** Who reasoned: `offline`, or provider and model. */
  model: z.string(),
  /** The memory that records the decision. */
  memory: z.string(),
  /** The calls of the agent's tools its model made while it decided, in order (each is a `tool_call` record and memory of its own). */
  tool_calls: z.array(ToolStepSchema).optional(),
});
export type EventDecision = z.infer<typeof EventDecisionSchema>;

/** What relevance is computed from, for one agent: the context's global part and the agent's own properties. */
export const RelevanceInputSchema = z
  .object({
    tick: z.number().optional(),
    global: z.record(z.string(), z.unknown()).default({}),
    properties: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export type RelevanceInput = z.infer<typeof RelevanceInputSchema>;

/** Requests on `<fleet>.agent.<id>.control`. */
export const AgentControlRequestSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('get_state') }).strict(),
  z.object({ op: z.literal('set_mode'), mode: AgentModeSchema }).strict(),
  z.object({ op: z.literal('snapshot') }).strict(),
  z.object({ op: z.literal('shutdown') }).strict(),
  /** The agent's own relevance, when its behaviour scores itself; `score: null` when it does not. */
  z.object({ op: z.literal('evaluate'), input: RelevanceInputSchema }).strict(),
  /** A person's decision on one of its pending tool calls, from the supervisor: an approved call runs. */
  z.object({ op: z.literal('decide_call'), call_id: z.string().min(1).max(64), decision: ApprovalDecisionSchema }).strict(),
]);
export type AgentControlRequest = z.infer<typeof AgentControlRequestSchema>;

/** The fields of a successful reply on `<fleet>.agent.<id>.control`: the agent's state after the operation. */
export const AgentControlOkSchema = z.object({
  state: AgentStateSchema,
  /** Under placement by lease, on `get_state`: the claim it runs under and its fence (ms since the epoch); null when it runs under none. */
  lease: z.object({ token: z.number().int().positive(), fence_at: z.number().int().positive() }).nullable().optional(),
  snapshot_at: z.string().optional(),
  score: z.number().min(0).max(1).nullable().optional(),
  /** The call `decide_call` decided, as it stands after the decision. */
  call: ToolCallRecordSchema.optional(),
});

/** Replies on `<fleet>.agent.<id>.control`: the agent's state after the operation, or an error with a code. */
export const AgentControlReplySchema = z.discriminatedUnion('ok', [
  AgentControlOkSchema.extend({ ok: z.literal(true) }),
  z.object({ ok: z.literal(false), error: WireErrorSchema }),
]);
export type AgentControlReply = z.infer<typeof AgentControlReplySchema>;

/** Messages on `<fleet>.agent.<id>.status`. */
export const AgentStatusMessageSchema = z.object({
  kind: z.enum(['ready', 'heartbeat', 'mode', 'stopping', 'stopped']),
  ts: z.string(),
  state: AgentStateSchema,
  rss_bytes: z.number().int().optional(),
  /** The fencing token it was started under (its start context's `ownershipToken`); absent when started without one. */
  token: z.number().int().positive().optional(),
  /**
   * Its declared tools' calls since the process started, by tool and how they ended; absent when it
   * made none. The supervisor counts only the tools the domain grants the agent.
   */
  tool_calls: z
    .array(z.object({ tool: ToolNameSchema, status: CallStatusSchema, count: z.number().int().min(0) }))
    .max(10_000)
    .optional(),
});
export type AgentStatusMessage = z.infer<typeof AgentStatusMessageSchema>;
