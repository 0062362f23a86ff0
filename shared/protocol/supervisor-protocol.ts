import { z } from 'zod';

import { AgentIdSchema, LifecycleStateSchema } from '../domain/domain-schema.js';
import { QueueNameSchema } from '../domain/queue-schema.js';
import { ToolNameSchema } from '../domain/tool-schema.js';
import { WireErrorSchema } from '../errors/errors.js';
import { isInboxSubject } from './fleet-names.js';
import { JobGiveUpSchema, ListedDeadLetterSchema, SkillBacklogSchema } from './job.js';
import { ApprovalsCursorSchema, ApprovalsPageSchema, PendingCallSchema } from './pending-call.js';
import { ReconcileContextSchema } from './reconcile-context.js';
import { ApprovalDecisionSchema, CallDecisionReportSchema } from './tool-call.js';

/** One failed agent in a report. */
export const AgentFailureSchema = z.object({ id: AgentIdSchema, code: z.string(), message: z.string() });

/**
 * What a reconcile did, by agent id. An agent taken through two steps in one reconcile
 * appears in both lists (Archived → Active: `restored` and `started`; Active → Archived:
 * `stopped` and `archived`).
 */
export const ReconcileReportSchema = z.object({
  started: z.array(AgentIdSchema),
  stopped: z.array(AgentIdSchema),
  upgraded: z.array(AgentIdSchema),
  downgraded: z.array(AgentIdSchema),
  archived: z.array(AgentIdSchema),
  restored: z.array(AgentIdSchema),
  unchanged: z.array(AgentIdSchema),
  failed: z.array(AgentFailureSchema),
  /** What the context carried that nothing reads (a reconcile's only): likely typos. */
  warnings: z.array(z.string()).optional(),
  /** True when nothing was executed (`--dry-run`): the lists say what would happen. */
  dry_run: z.boolean(),
  duration_ms: z.number(),
  /**
   * Agents still moving down (to Listening, Dormant or Archived) when a reconcile asked to return
   * after its wakes answered: their outcome comes in the next report's `settled`.
   */
  pending: z.array(AgentIdSchema).optional(),
  /** What the moves left `pending` by the reconcile before did once it had answered: a failed stop is reported here. */
  settled: z
    .object({
      stopped: z.array(AgentIdSchema),
      downgraded: z.array(AgentIdSchema),
      archived: z.array(AgentIdSchema),
      failed: z.array(AgentFailureSchema),
    })
    .optional(),
});
export type ReconcileReport = z.infer<typeof ReconcileReportSchema>;

/** One agent as `thymos status` shows it. */
export const AgentStatusRowSchema = z.object({
  id: AgentIdSchema,
  /** The host whose supervisor holds it (`[host] name`). */
  host: z.string(),
  state: LifecycleStateSchema,
  mode: z.enum(['active', 'passive']).nullable(),
  pid: z.number().int().nullable(),
  port: z.number().int().nullable(),
  score: z.number().nullable(),
  /** Where the score came from: forced, module, rules, agent, default, pinned. */
  source: z.string().nullable(),
  since: z.string(),
  rss_bytes: z.number().int().nullable(),
  restarts: z.number().int(),
  pinned: LifecycleStateSchema.nullable(),
  last_error: AgentFailureSchema.omit({ id: true }).nullable(),
  /** World events routed to it (to hear now, or on waking) since the supervisor started. */
  events_routed: z.number().int().default(0),
  /** Under placement by lease (`[cluster] enabled`): the host that holds it and the claim's token; null when none does, absent without. */
  placement: z.object({ host: z.string(), token: z.number().int() }).nullable().optional(),
});
export type AgentStatusRow = z.infer<typeof AgentStatusRowSchema>;

export const FleetStatusSchema = z.object({
  supervisor: z.object({
    pid: z.number().int(),
    /** The host it runs on (`[host] name`). */
    host: z.string(),
    started_at: z.string(),
    metrics_url: z.string(),
    nats_url: z.string(),
    /** The warm pool (`[supervisor] pool_size`), null when it is off: spares ready now, and wakes that took one (hits) or started cold (misses). */
    pool: z
      .object({
        size: z.number().int(),
        ready: z.number().int(),
        hits: z.number().int(),
        misses: z.number().int(),
        lastRefillMs: z.number().nullable(),
      })
      .nullable()
      .optional(),
    /**
     * This host's lease under placement by lease (`[cluster] enabled`), null without: `held`, or `lost`
     * until the next renewal takes it again; when the last renewal's lease ends; the last loss and why.
     */
    lease: z
      .object({
        state: z.enum(['held', 'lost']),
        lease_ms: z.number().int(),
        deadline: z.string(),
        lost: z.object({ at: z.string(), reason: z.string() }).nullable(),
        /** Every host of the fleet's placement bucket: its supervisor's pid, when the server stored its last renewal, and who marked its lease ended. */
        hosts: z
          .array(z.object({ host: z.string(), pid: z.number().int(), renewed_at: z.string(), expired_by: z.string().nullable() }))
          .default([]),
        /** The host that holds the fleet's coordinator role and answers the fleet's services, with its token; null while none does. */
        coordinator: z.object({ host: z.string(), token: z.number().int() }).nullable().default(null),
      })
      .nullable()
      .optional(),
  }),
  counts: z.object({ active: z.number(), listening: z.number(), dormant: z.number(), archived: z.number() }),
  agents: z.array(AgentStatusRowSchema),
});
export type FleetStatus = z.infer<typeof FleetStatusSchema>;

/** One transition of an agent, as kept in the registry's history. */
export const TransitionRecordSchema = z.object({
  id: AgentIdSchema,
  at: z.string(),
  from: LifecycleStateSchema,
  to: LifecycleStateSchema,
  score: z.number().nullable(),
  reason: z.string(),
  ok: z.boolean(),
  error: z.string().nullable(),
});
export type TransitionRecord = z.infer<typeof TransitionRecordSchema>;

/** Where one agent's MCP endpoint is, for another agent's Mcp tool. */
export const AgentEndpointSchema = z.object({
  url: z.string(),
  token: z.string().nullable(),
  pid: z.number().int().nullable(),
  woken: z.boolean(),
});
export type AgentEndpoint = z.infer<typeof AgentEndpointSchema>;

/** Where the client reaches a running agent (`agent_access`): the address its host advertises, its port and pid, and its MCP token. */
export const AgentAccessSchema = z.object({
  url: z.string(),
  port: z.number().int(),
  pid: z.number().int().nullable(),
  /** The agent's MCP token; null when `[mcp] require_token` is off, when not asked for, or when withheld. */
  token: z.string().nullable(),
  /** True when a token was asked for and is not handed over this supervisor's NATS link (neither loopback nor TLS). */
  withheld: z.boolean(),
});
export type AgentAccess = z.infer<typeof AgentAccessSchema>;

/** Requests to `<fleet>.supervisor.<op>`; the op is the last subject token. */
/** Where a long operation's progress goes: the requester's own inbox (`isInboxSubject`), never a fleet subject. */
export const ProgressSubjectSchema = z.string().max(256).refine(isInboxSubject, 'expected an inbox subject (_INBOX.…) for progress');

export const SupervisorRequestSchemas = {
  reconcile: z
    .object({
      context: ReconcileContextSchema,
      dry_run: z.boolean().default(false),
      strict: z.boolean().default(false),
      return_after_wakes: z.boolean().default(false),
      progress: ProgressSubjectSchema.optional(),
    })
    .strict(),
  status: z.object({}).strict(),
  /** Which supervisor process answers: callers of long requests watch it to notice a restart. */
  ping: z.object({}).strict(),
  start: z
    .object({ id: AgentIdSchema, mode: z.enum(['active', 'passive']).default('active'), progress: ProgressSubjectSchema.optional() })
    .strict(),
  stop: z.object({ id: AgentIdSchema, progress: ProgressSubjectSchema.optional() }).strict(),
  archive: z.object({ id: AgentIdSchema, progress: ProgressSubjectSchema.optional() }).strict(),
  restore: z.object({ id: AgentIdSchema, progress: ProgressSubjectSchema.optional() }).strict(),
  /** Stops every running agent with a snapshot (what `thymos down` asks first). */
  stop_all: z
    .object({
      progress: ProgressSubjectSchema.optional(),
      /** Only the supervisor of this `[host] name` stops its agents; another answering refuses (NOT_OWNER). */
      host: z.string().min(1).max(64).optional(),
    })
    .strict(),
  history: z.object({ id: AgentIdSchema, limit: z.number().int().min(1).max(1000).default(50) }).strict(),
  /**
   * An agent's call that waits for approval (sent by the agent, on its own subject
   * `<fleet>.agent.<id>.supervisor.call_pending`; again when it wakes): answered with the
   * decision, if one was made. A call of another agent is UNAUTHORIZED.
   */
  call_pending: z.object({ call: PendingCallSchema }).strict(),
  /**
   * The calls waiting for approval, of one agent or all, a page at a time (see `ApprovalsPage`):
   * the first page without `after`, each next with the `next` of the page before.
   */
  approvals: z.object({ id: AgentIdSchema.optional(), after: ApprovalsCursorSchema.optional() }).strict(),
  /** With `done`, for a call a crash interrupted (`interrupted_at`): it took effect; recorded `ok`, not run again. */
  approve: z
    .object({
      id: AgentIdSchema,
      call_id: z.string().min(1).max(64),
      reason: z.string().trim().min(1).max(2000),
      done: z.boolean().default(false),
    })
    .strict(),
  refuse: z.object({ id: AgentIdSchema, call_id: z.string().min(1).max(64), reason: z.string().trim().min(1).max(2000) }).strict(),
  /**
   * Where the asking agent reaches agent `id` for its Mcp tool `tool` (which must target `id`,
   * and be granted to the asker, the agent whose subject `<fleet>.agent.<asker>.supervisor.agent_endpoint`
   * the request came on): the MCP address and token. With `wake`, a Dormant or Listening agent
   * is made Active first; without, a Dormant one is AGENT_NOT_ACTIVE.
   */
  agent_endpoint: z
    .object({ id: AgentIdSchema, tool: ToolNameSchema, wake: z.boolean().default(false), progress: ProgressSubjectSchema.optional() })
    .strict(),
  /**
   * Where the client reaches running agent `id`, with its MCP token: what `fleet.agent(id)` and
   * `thymos url ID --header` use, on any host, without reading a file of the agent's. The token is
   * asked for only by a client whose own link is private, and handed out only over a supervisor's
   * link that is (loopback or TLS); otherwise it is `withheld`.
   */
  agent_access: z.object({ id: AgentIdSchema, token: z.boolean().default(true) }).strict(),
  /** The work queues' backlog, skill by skill; one queue's when `queue` is given. */
  jobs: z.object({ queue: QueueNameSchema.optional() }).strict(),
  /** The newest dead letters, of one queue with `queue`. */
  jobs_dead: z.object({ queue: QueueNameSchema.optional(), limit: z.number().int().min(1).max(1000).default(50) }).strict(),
  /** Puts a dead letter's job back on its queue (same job id) and removes the letter. */
  jobs_requeue: z.object({ seq: z.number().int().positive() }).strict(),
  /**
   * A worker gives up a job it holds (sent by the agent, on its own subject
   * `<fleet>.agent.<id>.supervisor.job_give_up`): the supervisor writes its dead letter and takes
   * it off the queue. Only a delivered, unacknowledged job of a queue and skill the agent works.
   */
  job_give_up: JobGiveUpSchema,
} as const;
export type SupervisorOp = keyof typeof SupervisorRequestSchemas;

/** The answer to `ping`. */
export const PingReplySchema = z.object({ pid: z.number().int(), started_at: z.string(), host: z.string().default('unknown') });
export type PingReply = z.infer<typeof PingReplySchema>;

/** What each op answers with: the `result` of `{ ok: true, result }`. The requester validates every reply with these. */
export const SupervisorResultSchemas = {
  reconcile: ReconcileReportSchema,
  status: FleetStatusSchema,
  ping: PingReplySchema,
  start: ReconcileReportSchema,
  stop: ReconcileReportSchema,
  archive: ReconcileReportSchema,
  restore: ReconcileReportSchema,
  stop_all: ReconcileReportSchema,
  history: z.array(TransitionRecordSchema),
  call_pending: z.object({ decision: ApprovalDecisionSchema.nullable() }),
  approvals: ApprovalsPageSchema,
  approve: CallDecisionReportSchema,
  refuse: CallDecisionReportSchema,
  agent_endpoint: AgentEndpointSchema,
  agent_access: AgentAccessSchema,
  jobs: z.array(SkillBacklogSchema),
  jobs_dead: z.array(ListedDeadLetterSchema),
  jobs_requeue: z.object({ id: z.string(), queue: z.string(), skill: z.string(), seq: z.number().int() }),
  /** The dead letter's place in the dead-letter stream, and whether it was there already (given up before, or caught by the supervisor). */
  job_give_up: z.object({ seq: z.number().int(), duplicate: z.boolean() }),
} as const satisfies Record<SupervisorOp, z.ZodType>;

/** Every supervisor reply: a result or an error with a stable code. */
export const SupervisorReplySchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), result: z.unknown() }),
  z.object({ ok: z.literal(false), error: WireErrorSchema }),
]);

/** Progress of a long operation, published on the subject the request named. */
export const ProgressMessageSchema = z.object({
  id: AgentIdSchema,
  step: z.string(),
  done: z.number().int(),
  total: z.number().int(),
  ok: z.boolean(),
  ms: z.number(),
});
export type ProgressMessage = z.infer<typeof ProgressMessageSchema>;
