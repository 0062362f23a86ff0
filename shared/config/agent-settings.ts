import { z } from 'zod';

import { ms } from './setting-types.js';

/** Settings of every agent process. */
export const AgentSettingsSchema = z
  .object({
    /**
     * Address the MCP endpoint binds to. Loopback unless you mean to expose agents.
     * @default "127.0.0.1"
     */
    host: z.string().min(1).default('127.0.0.1'),
    /**
     * Budget for a graceful stop: finish in-flight calls, snapshot, close. After it the process exits anyway.
     * @default 5000
     */
    shutdown_timeout_ms: ms(100, 600_000, 5000),
    /** Interval of heartbeats on `<fleet>.agent.<id>.status`. @default 2000 */
    heartbeat_ms: ms(100, 600_000, 2000),
    /**
     * How long start-up waits for NATS before the agent says ready without it
     * (it keeps reconnecting in the background and its state says `nats: "disconnected"`).
     * @default 1500
     */
    nats_wait_ms: ms(0, 60_000, 1500),
    /** Deadline for opening the private database. @default 10000 */
    db_open_timeout_ms: ms(100, 600_000, 10_000),
    /**
     * A JavaScript module, relative to this file, whose `createBehavior()` returns the
     * `AgentBehavior` every agent uses to talk. Unset: the offline behaviour.
     * @example "./behavior.js"
     */
    behavior: z.string().min(1).optional(),
    /**
     * When an active agent hears a world event, it reasons about it (`think`, then `decide`,
     * with the `[llm.reasoning]` model), remembers the decision and publishes it on
     * `<fleet>.agent.<id>.decision`. An agent's `reasonOnEvents` in the domain schema wins.
     * @default false
     */
    reason_on_events: z.boolean().default(false),
  })
  .strict();

/** Private memory of every agent. */
export const MemorySettingsSchema = z
  .object({
    /** Longest memory content accepted, in characters. @default 8000 */
    max_content_chars: z.number().int().min(1).max(1_000_000).default(8000),
    /** Most tags on one memory. @default 32 */
    max_tags: z.number().int().min(0).max(1000).default(32),
    /** Results of a recall when `k` is not given. @default 5 */
    recall_default_k: z.number().int().min(1).max(1000).default(5),
    /** Largest `k` a recall may ask for. @default 100 */
    recall_max_k: z.number().int().min(1).max(10_000).default(100),
    /**
     * Base stability S of a memory in hours: strength R = e^(-t/S) with t the hours since last access.
     * @default 168
     */
    stability_hours: z.number().positive().max(1e7).default(168),
    /** Each access multiplies stability by (1 + access_boost · accesses). @default 0.5 */
    access_boost: z.number().min(0).max(100).default(0.5),
    /** Importance (0..1) multiplies stability by (1 + importance_boost · importance). @default 2 */
    importance_boost: z.number().min(0).max(100).default(2),
    /** Emotional weight (0..1) multiplies stability by (1 + emotion_boost · weight). @default 1 */
    emotion_boost: z.number().min(0).max(100).default(1),
    /**
     * How a recall searches when the caller does not say: `cascade` (who, when and why before
     * words, then meaning among what those found), `bm25` (words), `vector` (meaning, needs an embedder) or
     * `hybrid` (both, fused by reciprocal rank). Without an embedder, `vector` and `hybrid` fall
     * back to `bm25`. @default "cascade"
     */
    search_strategy: z.enum(['bm25', 'vector', 'hybrid', 'cascade']).default('cascade'),
    /** Share of the vector ranking in a hybrid recall, 0..1. @default 0.5 */
    semantic_weight: z.number().min(0).max(1).default(0.5),
    /**
     * Longest a cascade recall waits for the query's vector to rank by meaning within what its
     * exact stages kept; later, it ranks without meaning (and logs it once). 0: never by meaning. @default 50
     */
    semantic_wait_ms: z.number().int().min(0).max(60_000).default(50),
    /**
     * Longest a recall's reinforcement (each returned memory's access count and time) waits to
     * be written, with the other writes made meanwhile; the recall does not wait for it. A kill -9
     * loses at most this long's reinforcements, never a memory. 0: written before the recall
     * returns. @default 1000
     */
    reinforce_write_ms: z.number().int().min(0).max(60_000).default(1000),
    /** The k of reciprocal rank fusion, 1 / (k + rank): larger flattens the ranks. @default 60 */
    rrf_k: z.number().min(1).max(1000).default(60),
    /** Find the people, places and organisations memories mention (the supervisor serves the fleet's concept service for it), and resolve aliases in recall. @default true */
    concepts: z.boolean().default(true),
    /** Mentions that make a concept provisional. @default 2 */
    concept_provisional_mentions: z.number().int().min(1).max(1_000_000).default(2),
    /** Mentions that make a concept tracked. @default 5 */
    concept_tracked_mentions: z.number().int().min(1).max(1_000_000).default(5),
    /** Summed importance of its memories that makes a concept tracked sooner. @default 3 */
    concept_tracked_significance: z.number().min(0).max(1_000_000).default(3),
    /**
     * Consolidate on a schedule: every this many seconds an agent consolidates what it
     * remembered since the last run (0: never on a schedule). @default 3600
     */
    consolidate_every_s: z.number().int().min(0).max(31_536_000).default(3600),
    /** Consolidate what is new when an agent is passivated (Active → Listening, or stopped to Dormant). @default true */
    consolidate_on_passivate: z.boolean().default(true),
    /** Memories two concepts must share (or one concept must appear in) to make a theme. @default 3 */
    theme_min_support: z.number().int().min(2).max(1_000_000).default(3),
    /** Most themes one consolidation writes. @default 5 */
    themes_max: z.number().int().min(0).max(1000).default(5),
    /** Importance added to a memory that supports a new theme (capped at 1). @default 0.1 */
    theme_importance_step: z.number().min(0).max(1).default(0.1),
    /**
     * A memory whose strength on the forgetting curve is below this is demoted: kept, but
     * left out of recall unless asked for (0: never demote). @default 0.05
     */
    demote_below: z.number().min(0).max(1).default(0.05),
    /** Demoted memories of one day are compacted into one digest memory once there are this many. @default 5 */
    compact_min: z.number().int().min(2).max(1_000_000).default(5),
    /** Longest a consolidation on passivation may take before the agent stops without it, in ms. @default 2000 */
    consolidate_budget_ms: ms(10, 600_000, 2000),
  })
  .strict();

export const McpSettingsSchema = z
  .object({
    /** Largest HTTP request body accepted on `/mcp`. @default 1048576 */
    max_body_bytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** Most concurrent MCP sessions per agent; the oldest idle one is closed past it. @default 64 */
    max_sessions: z.number().int().min(1).max(10_000).default(64),
    /**
     * Extra Host header values accepted besides `127.0.0.1:<port>` and `localhost:<port>`
     * (DNS-rebinding protection).
     * @default []
     */
    allowed_hosts: z.array(z.string().min(1)).default([]),
    /**
     * Ask every request to `/mcp` for `Authorization: Bearer <token>`. Each agent makes its
     * token on first start, in `<data_dir>/agents/<id>/mcp-token` (mode 0600); `connect()`, the
     * CLI and the supervisor read it from there, and `thymos url ID --header` prints the header.
     * `/health` stays open. `false` lets any process that reaches the port call the agent's
     * tools: an explicit choice.
     * @default true
     */
    require_token: z.boolean().default(true),
  })
  .strict();

export type MemorySettings = z.infer<typeof MemorySettingsSchema>;

/** `[tools]`: how agents run the tools the domain declares. */
export const ToolsSettingsSchema = z
  .object({
    /** Run tools of permission `admin`; without it such a call is refused with TOOL_DENIED. @default false */
    allow_admin: z.boolean().default(false),
    /**
     * How long a `confirm` call waits for a person's approval, counted while the agent is
     * Dormant too; then it is refused. @default 86400
     */
    approval_timeout_s: z
      .number()
      .int()
      .min(1)
      .max(30 * 86_400)
      .default(86_400),
    /**
     * How many calls of one agent may wait for approval at once; another is refused (TOOL_DENIED).
     * The supervisor holds an agent to it whatever the agent says: a call refused at its deadline
     * keeps its place until `approval_timeout_s` after it was handed in, and the supervisor keeps
     * at most twice this many of an agent's calls, decided ones included. @default 100
     */
    max_pending: z.number().int().min(1).max(10_000).default(100),
    /**
     * How many agents a chain of Mcp calls may pass through, the first caller included (A → B →
     * C is 3); a call that would go further, or back to an agent the chain passed, is refused
     * (TOOL_DENIED). @default 4
     */
    max_hops: z.number().int().min(1).max(32).default(4),
    /**
     * Within how many milliseconds the record of a `read_only` call is stored after the call
     * answers, written behind with its memory; `get_call` finds it at once all the same. A crash
     * in that time, or a stop cut short past `[agent] shutdown_timeout_ms`, loses the record of a read,
     * never of a call that changes something (saved before it runs and as it ends, before it
     * answers) or of a read that waited for a person's approval (saved before it answers). 0
     * stores every read's record before it answers. @default 1000
     */
    record_reads_within_ms: z.number().int().min(0).max(60_000).default(1000),
    /**
     * The heap of each worker thread a Script tool runs in, in MB (V8's old generation; the
     * memory of Buffers and ArrayBuffers is not counted). A script that needs more is stopped
     * and its call is TOOL_FAILED naming this limit; the agent keeps running. @default 256
     */
    script_memory_mb: z.number().int().min(16).max(16_384).default(256),
    /**
     * How many worker threads one Script module may have in an agent, so how many of its calls
     * run at once; another waits for a worker within its own timeout. @default 4
     */
    script_threads: z.number().int().min(1).max(64).default(4),
    /**
     * Where the glossaries for plain-words intents in French, Spanish and German are
     * (`thymos glossary --out DIR` builds them there), relative to this file; empty:
     * `models/glossary` of the Thymos install, which a reinstall removes. @default ""
     */
    glossary_dir: z.string().default(''),
  })
  .strict();

/** `[jobs]`: how agents work the jobs of the queues. */
export const JobsSettingsSchema = z
  .object({
    /** Jobs of one skill on one queue an agent works at once. @default 1 */
    concurrency: z.number().int().min(1).max(64).default(1),
  })
  .strict();
