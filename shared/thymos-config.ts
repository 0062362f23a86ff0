import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import toml from 'toml';
import { z } from 'zod';
import { ErrorCode, ThymosError } from './errors.js';
import { LLM_PROVIDERS } from './llm-provider.js';
import { describeIssue } from './zod-issues.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const ms = (min: number, max: number, fallback: number) => z.number().int().min(min).max(max).default(fallback);
const unit = (fallback: number) => z.number().min(0).max(1).default(fallback);

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
    /** Interval of heartbeats on `thymos.agent.<id>.status`. @default 2000 */
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
     * `thymos.agent.<id>.decision`. An agent's `reasonOnEvents` in the domain schema wins.
     * @default false
     */
    reason_on_events: z.boolean().default(false),
  })
  .strict();

/** Score → state thresholds, damping and capacity. Used by the supervisor. */
export const LifecycleSettingsSchema = z
  .object({
    /** A score at or above this makes an agent Active. @default 0.7 */
    threshold_active: unit(0.7),
    /** At or above this (and below active): Listening. @default 0.4 */
    threshold_listening: unit(0.4),
    /** At or above this (and below listening): Dormant; below it: Archived. @default 0.1 */
    threshold_dormant: unit(0.1),
    /**
     * Margin around each threshold: an agent leaves its state only when its score passes the
     * threshold by more than this, so a score wobbling at a threshold does not flap the process.
     * @default 0.05
     */
    hysteresis: z.number().min(0).max(0.5).default(0.05),
    /**
     * Least time an agent stays in a state before the score may move it to a lower one.
     * Moves up are never delayed (a player walking in should not wait).
     * @default 10000
     */
    min_dwell_ms: ms(0, 86_400_000, 10_000),
    /** Most agents running at once (Active + Listening); the highest-scored keep running. @default 16 */
    max_running: z.number().int().min(0).max(100_000).default(16),
    /** Most Active agents at once; the rest of those that qualify listen. @default 8 */
    max_active: z.number().int().min(0).max(100_000).default(8),
    /** Score of an agent that nothing else scores (no module, rule or agent answer). @default 0.2 */
    default_score: unit(0.2),
    /**
     * Agents held in a state whatever their score, e.g. `{ elder_rowan = "active" }`.
     * Wins over a Pkl `pinned`. Pinned agents count against the capacity limits.
     * @default {}
     */
    pins: z.record(z.string().regex(/^[a-z][a-z0-9_]{0,47}$/, 'an agent id'), z.enum(['active', 'listening', 'dormant', 'archived'])).default({}),
  })
  .strict()
  .refine((l) => l.threshold_active >= l.threshold_listening && l.threshold_listening >= l.threshold_dormant, {
    message: 'expected threshold_active >= threshold_listening >= threshold_dormant',
  })
  .refine((l) => l.max_active <= l.max_running, { message: 'expected max_active <= max_running', path: ['max_active'] })
  .refine((l) => Object.values(l.pins).filter((s) => s === 'active').length <= l.max_active, {
    message: 'more agents pinned "active" than max_active allows',
    path: ['pins'],
  })
  .refine((l) => Object.values(l.pins).filter((s) => s === 'active' || s === 'listening').length <= l.max_running, {
    message: 'more agents pinned to a running state than max_running allows',
    path: ['pins'],
  });

/** The supervisor process. */
export const SupervisorSettingsSchema = z
  .object({
    /**
     * A JavaScript module, relative to this file, whose `evaluate(input)` scores agents before the
     * Pkl rules do. Returning `undefined` passes the agent on to the next source.
     * @example "./relevance.js"
     */
    relevance: z.string().min(1).optional(),
    /** Deadline for a running agent's own relevance answer over NATS. @default 250 */
    evaluate_timeout_ms: ms(10, 60_000, 250),
    /** Transitions run at once during a reconcile. @default 4 */
    concurrency: z.number().int().min(1).max(256).default(4),
    /** Budget for an agent start: pm2 start, NATS ready, MCP answering. @default 30000 */
    start_timeout_ms: ms(1000, 600_000, 30_000),
    /** Agent MCP ports are allocated from this range. @default 7400 */
    agent_port_min: z.number().int().min(1024).max(65_535).default(7400),
    /** @default 7999 */
    agent_port_max: z.number().int().min(1024).max(65_535).default(7999),
    /** Port of the Prometheus `/metrics` endpoint on 127.0.0.1; 0 picks a free one (see `thymos status`). @default 0 */
    metrics_port: z.number().int().min(0).max(65_535).default(0),
    /** How long a client waits for the supervisor to answer one request (a reconcile may start many agents). @default 300000 */
    request_timeout_ms: ms(1000, 3_600_000, 300_000),
    /** pm2 restarts a crashed agent after this delay, doubling up to 15 s. @default 200 */
    restart_delay_ms: ms(0, 60_000, 200),
  })
  .strict()
  .refine((s) => s.agent_port_min <= s.agent_port_max, { message: 'expected agent_port_min <= agent_port_max', path: ['agent_port_max'] });

/** World events on JetStream. */
export const EventsSettingsSchema = z
  .object({
    /** Events older than this leave the stream (and can no longer be replayed). @default 604800 (7 days) */
    max_age_s: z.number().int().min(1).max(31_536_000).default(604_800),
    /** Largest size of the event stream; the oldest events go first. @default 268435456 */
    max_bytes: z.number().int().min(1_048_576).max(2 ** 42).default(268_435_456),
    /** A republished event id within this window is dropped. @default 120 */
    duplicate_window_s: z.number().int().min(1).max(86_400).default(120),
    /** An event handed to an agent and not acknowledged (it crashed) is delivered again after this. @default 30 */
    ack_wait_s: z.number().int().min(1).max(3600).default(30),
    /** Most missed events an agent replays when it wakes; older ones beyond it are skipped. @default 10000 */
    replay_max: z.number().int().min(0).max(10_000_000).default(10_000),
  })
  .strict();
export type EventsSettings = z.infer<typeof EventsSettingsSchema>;

export const NatsSettingsSchema = z
  .object({
    /**
     * NATS server or cluster to use, e.g. `nats://127.0.0.1:4222` (comma-separated for several).
     * Unset: `thymos up` runs its own nats-server.
     * @example "nats://127.0.0.1:4222"
     */
    url: z.string().min(1).optional(),
    /** Port of the nats-server `thymos up` runs when `url` is unset; 0 picks a free one at first `up`. @default 0 */
    port: z.number().int().min(0).max(65_535).default(0),
  })
  .strict();

/** The shared world store: agent registry and the application's world tables. */
export const WorldSettingsSchema = z
  .object({
    /**
     * A SurrealDB server to use instead of the embedded store under `data/world`, e.g.
     * `ws://127.0.0.1:8000`. Agents do not notice: they reach the world only through the supervisor.
     * @example "ws://127.0.0.1:8000"
     */
    url: z
      .string()
      .regex(/^(wss?|https?):\/\/\S+$/, 'expected a SurrealDB server url: ws://, wss://, http:// or https://')
      .optional(),
    /** Namespace and database in that server (and in the embedded store). @default "thymos" / "world" */
    namespace: z.string().min(1).default('thymos'),
    database: z.string().min(1).default('world'),
    /** User to sign in as on that server; unset: no sign-in. */
    username: z.string().min(1).optional(),
    /** Environment variable that holds the password of `username`. @default "THYMOS_WORLD_PASSWORD" */
    password_env: z.string().min(1).default('THYMOS_WORLD_PASSWORD'),
    /** A live subscription not renewed within this time ends (a crashed game loop or agent). @default 30000 */
    lease_ms: ms(1000, 3_600_000, 30_000),
    /** Most live subscriptions at once. @default 1000 */
    max_subscriptions: z.number().int().min(1).max(100_000).default(1000),
  })
  .strict();
export type WorldSettings = z.infer<typeof WorldSettingsSchema>;

/** The fleet's embedding service (in the supervisor) that makes vector search possible. */
export const EmbeddingSettingsSchema = z
  .object({
    /** Whether the supervisor serves `thymos.embed`; off, recall uses BM25 only. @default true */
    enabled: z.boolean().default(true),
    /**
     * `custom` runs the model in `model_dir` (offline; `npm run build:model` builds one from
     * GloVe word vectors); a fastembed model name (e.g. "fast-bge-small-en-v1.5") is downloaded
     * into `cache_dir` on first use. @default "custom"
     */
    model: z.string().min(1).default('custom'),
    /** Directory of the custom model; empty: `models/glove-100d` of the Thymos install. @default "" */
    model_dir: z.string().default(''),
    /** Where downloaded models are kept; empty: `<data_dir>/models`. @default "" */
    cache_dir: z.string().default(''),
    /** Longest text in tokens; longer ones are cut. @default 128 */
    max_length: z.number().int().min(8).max(8192).default(128),
    /** Most texts embedded in one model run; waiting requests are merged up to it. @default 64 */
    batch_max: z.number().int().min(1).max(4096).default(64),
    /** Vectors kept by content hash, so a text is embedded once. @default 20000 */
    cache_entries: z.number().int().min(0).max(10_000_000).default(20_000),
    /** How long an agent waits for vectors before storing a memory without one. @default 5000 */
    timeout_ms: ms(100, 600_000, 5000),
  })
  .strict();
export type EmbeddingSettings = z.infer<typeof EmbeddingSettingsSchema>;

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
     * How a recall searches when the caller does not say: `bm25` (words), `vector` (meaning,
     * needs an embedder) or `hybrid` (both, fused by reciprocal rank). Without an embedder,
     * `vector` and `hybrid` fall back to `bm25`. @default "bm25"
     */
    search_strategy: z.enum(['bm25', 'vector', 'hybrid']).default('bm25'),
    /** Share of the vector ranking in a hybrid recall, 0..1. @default 0.5 */
    semantic_weight: z.number().min(0).max(1).default(0.5),
    /** The k of reciprocal rank fusion, 1 / (k + rank): larger flattens the ranks. @default 60 */
    rrf_k: z.number().min(1).max(1000).default(60),
    /** Find the people, places and organisations memories mention, and resolve aliases in recall. @default true */
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

/** The model of one use (dialogue, reasoning, extraction, consolidation). */
export const LlmUseSettingsSchema = z
  .object({
    /**
     * `offline` (no model: answers composed from persona, speech style and memories),
     * `openai-compatible` (an HTTP endpoint), or `mcp-sampling` (the model of the MCP client
     * that is talking to the agent, when it can sample; offline otherwise). @default "offline"
     */
    provider: z.enum(LLM_PROVIDERS).default('offline'),
    /** The chat-completions base URL, e.g. "http://127.0.0.1:11434/v1" (Ollama). */
    base_url: z.string().regex(/^https?:\/\/\S+$/, 'expected an http:// or https:// URL').optional(),
    /** The model name the endpoint knows, e.g. "llama3.2". */
    model: z.string().min(1).optional(),
    /** Name of the environment variable holding the API key (the key itself never goes in this file). */
    api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name').optional(),
    temperature: z.number().min(0).max(2).default(0.7),
    max_tokens: z.number().int().min(1).max(1_000_000).default(512),
    /** A call, all retries included, is abandoned after this long. @default 30000 */
    timeout_ms: ms(100, 600_000, 30_000),
    /** Retries on 429 and 5xx, with exponential backoff. @default 3 */
    max_retries: z.number().int().min(0).max(10).default(3),
    /** What 1,000 input tokens cost, in the unit you bill in (e.g. USD); adds up in the agent's `llm.cost`. @default 0 */
    input_cost_per_1k: z.number().min(0).max(1_000_000).default(0),
    /** What 1,000 output tokens cost. @default 0 */
    output_cost_per_1k: z.number().min(0).max(1_000_000).default(0),
  })
  .strict()
  .refine((u) => u.provider !== 'openai-compatible' || u.base_url !== undefined, { message: 'expected base_url for provider "openai-compatible"', path: ['base_url'] })
  .refine((u) => u.provider !== 'openai-compatible' || u.model !== undefined, { message: 'expected model for provider "openai-compatible"', path: ['model'] });
export type LlmUseSettings = z.infer<typeof LlmUseSettingsSchema>;

/** Which model each use runs. */
export const LlmSettingsSchema = z
  .object({
    dialogue: LlmUseSettingsSchema.prefault({}),
    reasoning: LlmUseSettingsSchema.prefault({}),
    extraction: LlmUseSettingsSchema.prefault({}),
    consolidation: LlmUseSettingsSchema.prefault({}),
  })
  .strict();

export const McpSettingsSchema = z
  .object({
    /** Largest HTTP request body accepted on `/mcp`. @default 1048576 */
    max_body_bytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
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
     * CLI and the supervisor read it from there. `/health` stays open.
     * @default false
     */
    require_token: z.boolean().default(false),
  })
  .strict();

export const LogSettingsSchema = z
  .object({
    /** @default "info" */
    level: z.enum(LOG_LEVELS).default('info'),
  })
  .strict();

export const DomainSettingsSchema = z
  .object({
    /**
     * The application's Pkl module that amends `schemas/Thymos.pkl`, relative to this file.
     * Unset: agents run with default personas.
     * @example "world.pkl"
     */
    schema: z.string().min(1).optional(),
  })
  .strict();

/** The whole of `thymos.toml`. Every default lives here. */
export const ThymosConfigSchema = z
  .object({
    /** Where agents, the world store and pm2 keep their files, relative to this file. @default "data" */
    data_dir: z.string().min(1).default('data'),
    domain: DomainSettingsSchema.prefault({}),
    agent: AgentSettingsSchema.prefault({}),
    lifecycle: LifecycleSettingsSchema.prefault({}),
    supervisor: SupervisorSettingsSchema.prefault({}),
    nats: NatsSettingsSchema.prefault({}),
    events: EventsSettingsSchema.prefault({}),
    world: WorldSettingsSchema.prefault({}),
    embedding: EmbeddingSettingsSchema.prefault({}),
    memory: MemorySettingsSchema.prefault({}),
    llm: LlmSettingsSchema.prefault({}),
    mcp: McpSettingsSchema.prefault({}),
    log: LogSettingsSchema.prefault({}),
  })
  .strict();

export type ThymosConfigInput = z.input<typeof ThymosConfigSchema>;
export type ThymosSettings = z.infer<typeof ThymosConfigSchema>;
export type MemorySettings = z.infer<typeof MemorySettingsSchema>;
export type AgentSettings = z.infer<typeof AgentSettingsSchema>;
export type LifecycleSettings = z.infer<typeof LifecycleSettingsSchema>;
export type SupervisorSettings = z.infer<typeof SupervisorSettingsSchema>;

/** A validated configuration with its paths resolved. */
export interface ThymosConfig extends ThymosSettings {
  /** Absolute path of the file it came from, or undefined for built-in defaults. */
  readonly file: string | undefined;
  /** Absolute data directory. */
  readonly dataPath: string;
  /** Absolute path of the application's Pkl module, if any. */
  readonly domainSchemaPath: string | undefined;
  /** Absolute path of the application's behaviour module, if any. */
  readonly behaviorPath: string | undefined;
  /** Absolute path of the application's relevance module, if any. */
  readonly relevancePath: string | undefined;
}

/**
 * Reads and validates a `thymos.toml`. Errors name the file, the key, what was
 * expected, what came, and the line.
 */
export function loadConfig(file: string): ThymosConfig {
  const path = resolve(file);
  let source: string;
  try {
    source = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `cannot read config file ${path}: ${(err as Error).message}`, {
      cause: err,
      location: { file: path },
    });
  }
  return parseConfig(source, path);
}

/** `file`, else `$THYMOS_CONFIG`, else `./thymos.toml` if present, else built-in defaults. */
export function resolveConfigFile(file: string | undefined): ThymosConfig {
  const path = file ?? (process.env.THYMOS_CONFIG || undefined) ?? (existsSync('thymos.toml') ? 'thymos.toml' : undefined);
  return path === undefined ? configFromObject({}) : loadConfig(path);
}

/** Validates configuration text. `file` is used for messages and to resolve relative paths. */
export function parseConfig(source: string, file?: string): ThymosConfig {
  const where = file ?? '<config>';
  let raw: unknown;
  try {
    raw = toml.parse(source);
  } catch (err) {
    const loc = (err as { location?: { start?: { line?: number; column?: number } } }).location?.start;
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `${where}${loc?.line ? `:${loc.line}:${loc.column}` : ''}: not valid TOML: ${(err as Error).message}`,
      { cause: err, location: { file: where, line: loc?.line, column: loc?.column } },
    );
  }
  return fromObject(raw, where, source, file);
}

/** Validates an already-parsed configuration object (for the library and tests). */
export function configFromObject(input: ThymosConfigInput, baseDir: string = process.cwd()): ThymosConfig {
  return fromObject(input, '<object>', undefined, resolve(baseDir, 'thymos.toml'), false);
}

function fromObject(raw: unknown, where: string, source: string | undefined, file: string | undefined, fromFile = true): ThymosConfig {
  const result = ThymosConfigSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const keyPath = issue.path.map(String);
    const line = source === undefined ? undefined : findKeyLine(source, keyPath, issue);
    const dotted = keyPath.join('.') || '(top level)';
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `${where}${line ? `:${line}` : ''}: ${dotted}: ${describeIssue(issue, raw)}`,
      { location: { file: where, line, path: dotted } },
    );
  }
  const base = file === undefined ? process.cwd() : dirname(resolve(file));
  const settings = result.data;
  const at = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  return Object.freeze({
    ...settings,
    file: fromFile && file !== undefined ? resolve(file) : undefined,
    dataPath: at(settings.data_dir),
    domainSchemaPath: settings.domain.schema === undefined ? undefined : at(settings.domain.schema),
    behaviorPath: settings.agent.behavior === undefined ? undefined : at(settings.agent.behavior),
    relevancePath: settings.supervisor.relevance === undefined ? undefined : at(settings.supervisor.relevance),
  });
}

/**
 * Finds the line of a key in TOML text: the `[table]` header of its parent, then
 * the `key =` line inside it. Best effort: returns undefined when not found.
 */
export function findKeyLine(source: string, path: readonly string[], issue?: { code: string; keys?: readonly string[] }): number | undefined {
  const keys = issue?.code === 'unrecognized_keys' && issue.keys?.[0] ? [...path, issue.keys[0]] : [...path];
  if (keys.length === 0) return undefined;
  const lines = source.split(/\r?\n/);
  const table = keys.slice(0, -1).join('.');
  const key = keys[keys.length - 1]!;
  let current = '';
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!.trim();
    const header = /^\[\s*([^\]]+?)\s*\]/.exec(text);
    if (header) {
      current = header[1]!.replace(/\s+/g, '');
      if (current === keys.join('.')) return i + 1;
      continue;
    }
    const m = /^("?)([A-Za-z0-9_\-.]+)\1\s*=/.exec(text);
    if (!m) continue;
    const full = current ? `${current}.${m[2]}` : m[2]!;
    if (full === `${table ? `${table}.` : ''}${key}` || (current === table && m[2] === key)) return i + 1;
  }
  return undefined;
}
