import { z } from 'zod';

import { NATS_URL, NATS_URL_MESSAGE } from './host-settings.js';
import { ms, unit } from './setting-types.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * A fleet's name: the first token of every subject and the prefix of every stream, so
 * two fleets can share one NATS. Lower-case, so it is also a valid stream name upper-cased.
 */
export const FleetNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,31}$/, 'expected a fleet name: a lower-case letter, then up to 31 of a-z, 0-9, _ or -, e.g. "thymos"');

/** The fleet name when `[fleet] name` is unset; it gives the names Thymos has always used. */
export const DEFAULT_FLEET_NAME = 'thymos';

/** Which fleet this is. */
export const FleetSettingsSchema = z
  .object({
    /**
     * The fleet's name: the first token of every NATS subject (`<name>.agent.<id>.control`) and
     * the prefix of every stream (`<NAME>_EVENTS`), so two fleets can share one NATS server.
     * @default "thymos"
     */
    name: FleetNameSchema.default(DEFAULT_FLEET_NAME),
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
    pins: z
      .record(z.string().regex(/^[a-z][a-z0-9_]{0,47}$/, 'an agent id'), z.enum(['active', 'listening', 'dormant', 'archived']))
      .default({}),
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
    /** The last port of that range. @default 7999 */
    agent_port_max: z.number().int().min(1024).max(65_535).default(7999),
    /** Port of the Prometheus `/metrics` endpoint on 127.0.0.1; 0 picks a free one (see `thymos status`). @default 0 */
    metrics_port: z.number().int().min(0).max(65_535).default(0),
    /** How long a client waits for the supervisor to answer one request (a reconcile may start many agents). @default 300000 */
    request_timeout_ms: ms(1000, 3_600_000, 300_000),
    /** pm2 restarts a crashed agent after this delay, doubling up to 15 s. @default 200 */
    restart_delay_ms: ms(0, 60_000, 200),
    /**
     * Spare agent processes kept warm: started ahead of need with every module an agent loads,
     * each taken by one wake and then the agent's for life. 0 starts every agent cold. Each
     * spare costs about 55 MB PSS (116 MB RSS) while it waits; see docs/waking.md. @default 0
     */
    pool_size: z.number().int().min(0).max(64).default(0),
    /**
     * MCP ports pinned per agent, over the Pkl `port` of its definition: the agent always runs on
     * its pin (a wake fails with PORT_IN_USE if something else holds it). Unpinned agents keep
     * the port they had last while it is free. @example { elder_rowan = 7450 }
     * @default {}
     */
    agent_ports: z.record(z.string().regex(/^[a-z][a-z0-9_]{0,47}$/, 'an agent id'), z.number().int().min(1).max(65_535)).default({}),
  })
  .strict()
  .refine((s) => new Set(Object.values(s.agent_ports)).size === Object.keys(s.agent_ports).length, {
    message: 'expected each agent in agent_ports on a port of its own',
    path: ['agent_ports'],
  })
  .refine((s) => s.agent_port_min <= s.agent_port_max, { message: 'expected agent_port_min <= agent_port_max', path: ['agent_port_max'] });

/** World events on JetStream. */
export const EventsSettingsSchema = z
  .object({
    /** Events older than this leave the stream (and can no longer be replayed). @default 604800 (7 days) */
    max_age_s: z.number().int().min(1).max(31_536_000).default(604_800),
    /** Largest size of the event stream; the oldest events go first. @default 268435456 */
    max_bytes: z
      .number()
      .int()
      .min(1_048_576)
      .max(2 ** 42)
      .default(268_435_456),
    /** A republished event id within this window is dropped; at most `max_age_s`. @default 120 */
    duplicate_window_s: z.number().int().min(1).max(86_400).default(120),
    /** An event handed to an agent and not acknowledged (it crashed) is delivered again after this. @default 30 */
    ack_wait_s: z.number().int().min(1).max(3600).default(30),
    /** Most missed events an agent replays when it wakes; older ones beyond it are skipped. @default 10000 */
    replay_max: z.number().int().min(0).max(10_000_000).default(10_000),
    /**
     * An event an agent hears live is recallable at once and written to its database within this
     * time, with the others heard meanwhile in one write; it is acknowledged once written, so a
     * crash in between has it delivered again (after `ack_wait_s`). 0: written before it is
     * announced. Must be under `ack_wait_s`. @default 1000
     */
    store_delay_ms: z.number().int().min(0).max(10_000).default(1000),
  })
  .strict()
  .refine((e) => e.store_delay_ms < e.ack_wait_s * 1000, {
    message: 'store_delay_ms must be under ack_wait_s (in ms): an event not yet written would be delivered again',
    path: ['store_delay_ms'],
  })
  .refine((e) => e.duplicate_window_s <= e.max_age_s, {
    message: 'duplicate_window_s must be at most max_age_s: JetStream keeps no event ids longer than the events',
    path: ['duplicate_window_s'],
  });
export type EventsSettings = z.infer<typeof EventsSettingsSchema>;

export const NatsSettingsSchema = z
  .object({
    /**
     * NATS server or cluster to use, e.g. `nats://127.0.0.1:4222`; several as an array, or
     * comma-separated in one string. Unset: `thymos up` runs its own nats-server.
     * @example "nats://127.0.0.1:4222"
     */
    url: z
      .union([
        z.string().min(1).regex(NATS_URL, NATS_URL_MESSAGE),
        z
          .array(
            z
              .string()
              .min(1)
              .regex(/^[^,]+$/, 'expected one server per entry, without commas')
              .regex(NATS_URL, NATS_URL_MESSAGE),
          )
          .min(1),
      ])
      .transform((url) => (Array.isArray(url) ? url.join(',') : url))
      .optional(),
    /** Port of the nats-server `thymos up` runs when `url` is unset; 0 picks a free one at first `up`. @default 0 */
    port: z.number().int().min(0).max(65_535).default(0),
    /**
     * With `url`: every process of the fleet connects to that server as its own identity (the
     * keys `thymos nats-config` makes, in an account of the fleet's own that it writes for the
     * server to include). Without `url` it changes nothing: the server `thymos up` runs always asks for them.
     * @default false
     */
    identities: z.boolean().default(false),
    /**
     * With `url`, for a server that authenticates with JWTs (operator mode, e.g. users made with
     * `nsc`): a folder of NATS credentials files, one per identity, named `<identity>.creds`
     * (`supervisor`, `client`, `spare`, `agent-<id>`); every process connects with its own.
     * Relative to this file. Instead of `identities`, not with it.
     * @example "creds"
     */
    credentials: z.string().min(1).optional(),
    /**
     * With `url`: a PEM file of the certificate authority that signed that server's certificate
     * (a certificate a public authority signed needs none). Relative to this file. Setting any
     * `tls_` key makes every process of the fleet require TLS of that server: one without it is
     * refused, never talked to in the clear.
     * @example "certs/ca.pem"
     */
    tls_ca: z.string().min(1).optional(),
    /** With `url`: the fleet's client certificate (PEM), for a server that verifies its clients (mutual TLS); with `tls_key`. */
    tls_cert: z.string().min(1).optional(),
    /** With `url`: the private key of `tls_cert` (PEM; refused while any user may read it: keep it mode 0600, or 0640 for a group such as ssl-cert). */
    tls_key: z.string().min(1).optional(),
  })
  .strict()
  .refine((n) => n.url !== undefined || n.credentials === undefined, {
    message: 'expected credentials only with url: the nats-server thymos up runs has identities of its own',
    path: ['credentials'],
  })
  .refine((n) => !(n.identities && n.credentials !== undefined), {
    message:
      'expected identities or credentials, not both: the fleet connects with its own keys (identities) or with the credentials files of a server in operator mode',
    path: ['credentials'],
  })
  .refine((n) => (n.tls_cert === undefined) === (n.tls_key === undefined), {
    message: 'expected tls_cert and tls_key together (a client certificate and its key)',
    path: ['tls_cert'],
  })
  .refine((n) => n.url !== undefined || (n.tls_ca ?? n.tls_cert ?? n.tls_key) === undefined, {
    message: 'expected tls_ca, tls_cert and tls_key only with url: the nats-server thymos up runs listens on 127.0.0.1 without TLS',
    path: ['tls_ca'],
  });

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
    /** Namespace in that server (and in the embedded store). @default "thymos" */
    namespace: z.string().min(1).default('thymos'),
    /** Database in that namespace. @default "world" */
    database: z.string().min(1).default('world'),
    /** User to sign in as on that server; unset: no sign-in. */
    username: z.string().min(1).optional(),
    /** Environment variable that holds the password of `username`. @default "THYMOS_WORLD_PASSWORD" */
    password_env: z.string().min(1).default('THYMOS_WORLD_PASSWORD'),
    /** A live subscription not renewed within this time ends (a crashed game loop or agent). @default 30000 */
    lease_ms: ms(1000, 3_600_000, 30_000),
    /** Most live subscriptions at once. @default 1000 */
    max_subscriptions: z.number().int().min(1).max(100_000).default(1000),
    /** Most live subscriptions one owner runs at once: an agent, or one fleet client; no agent can take them all. @default 100 */
    max_subscriptions_per_owner: z.number().int().min(1).max(100_000).default(100),
  })
  .strict();

/** The fleet's embedding service (in the supervisor) that makes vector search possible. */
export const EmbeddingSettingsSchema = z
  .object({
    /** Whether the supervisor serves `<fleet>.embed`; off, recall uses BM25 only. @default true */
    enabled: z.boolean().default(true),
    /**
     * `custom` runs the model in `model_dir` (offline; `npm run build:model` builds one from
     * GloVe word vectors); a fastembed model name (e.g. "fast-bge-small-en-v1.5") is downloaded
     * into `cache_dir` on first use. @default "custom"
     */
    model: z.string().min(1).default('custom'),
    /**
     * Directory of the custom model, relative to the config file; empty: `models/glove-100d` of
     * the Thymos install. Agents read plain words (`resolve_intent`, `act`) with it too when it is
     * a static model as `npm run build:model` builds one. @default ""
     */
    model_dir: z.string().default(''),
    /** Where downloaded models are kept, relative to the config file; empty: `<data_dir>/models`. @default "" */
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

export const LogSettingsSchema = z
  .object({
    /** The least level each process logs: fatal, error, warn, info, debug, trace or silent. @default "info" */
    level: z.enum(LOG_LEVELS).default('info'),
    /**
     * Put a tool call's arguments into its `mcp request` debug line. Off, the line says which
     * tool, how long and how it ended, never what was said. @default false
     */
    mcp_arguments: z.boolean().default(false),
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

export type LifecycleSettings = z.infer<typeof LifecycleSettingsSchema>;
