import { z } from 'zod';

/**
 * Stable error codes of the Thymos error family. Codes never change meaning once
 * published; callers branch on the code, never on the message text.
 */
export const ErrorCode = {
  /** `thymos.toml` is missing, unreadable, not TOML, or fails validation. */
  CONFIG_INVALID: 'CONFIG_INVALID',
  /** The Pkl domain schema failed to evaluate or does not match the expected shape. */
  SCHEMA_INVALID: 'SCHEMA_INVALID',
  /** The `pkl` binary could not be found or started. */
  PKL_UNAVAILABLE: 'PKL_UNAVAILABLE',
  /** Evaluating the domain could read beyond the application's folder and Thymos's schemas: a link in the folder leads out of it (`details.link`, `details.target`), or the folder is too large to check. */
  SCHEMA_READ_REFUSED: 'SCHEMA_READ_REFUSED',
  /** Command-line arguments are missing or malformed. */
  USAGE: 'USAGE',
  /** Input at an interface (MCP, NATS, HTTP) failed validation. */
  INVALID_INPUT: 'INVALID_INPUT',
  /** The agent's port is already bound by another process. */
  PORT_IN_USE: 'PORT_IN_USE',
  /** Another live process already holds this agent's data directory. */
  AGENT_ALREADY_RUNNING: 'AGENT_ALREADY_RUNNING',
  /** The agent is Listening (passive) and does not hold dialogue. */
  AGENT_NOT_ACTIVE: 'AGENT_NOT_ACTIVE',
  /** The agent is shutting down and takes no new calls. */
  AGENT_STOPPING: 'AGENT_STOPPING',
  /** The agent is not known to the domain schema or registry. */
  AGENT_NOT_FOUND: 'AGENT_NOT_FOUND',
  /** The private database could not be opened or written. */
  DATABASE_ERROR: 'DATABASE_ERROR',
  /** A bounded wait ran out. */
  TIMEOUT: 'TIMEOUT',
  /** Opening or connecting did not finish in time. */
  STARTUP_TIMEOUT: 'STARTUP_TIMEOUT',
  /** The NATS connection is not available right now. */
  NATS_UNAVAILABLE: 'NATS_UNAVAILABLE',
  /** A reconcile context failed validation; the message names the bad path. */
  INVALID_CONTEXT: 'INVALID_CONTEXT',
  /** The agent is pinned to a state by configuration and an operation asked for another. */
  AGENT_PINNED: 'AGENT_PINNED',
  /** No fleet is running for this data directory (`thymos up` starts one). */
  FLEET_NOT_RUNNING: 'FLEET_NOT_RUNNING',
  /** A file that would be written is there already (`thymos init` over a project). */
  FILE_EXISTS: 'FILE_EXISTS',
  /** A file could not be written (permissions, a full disk); what was written of it is taken back. */
  WRITE_FAILED: 'WRITE_FAILED',
  /** Another live supervisor already owns this fleet. */
  SUPERVISOR_ALREADY_RUNNING: 'SUPERVISOR_ALREADY_RUNNING',
  /** Another supervisor owns the agent: this one's claim was refused or lost, so it does not move the agent or write its data. */
  NOT_OWNER: 'NOT_OWNER',
  /** An agent's lease ended (placement by lease, `[cluster] enabled`): it stops itself, or does not start, until its supervisor claims it again. */
  LEASE_ENDED: 'LEASE_ENDED',
  /** The agent's process exited while starting; the message carries the end of its log. */
  AGENT_START_FAILED: 'AGENT_START_FAILED',
  /** Starting or activating one more agent would pass `[lifecycle] max_running` or `max_active`. */
  CAPACITY_EXCEEDED: 'CAPACITY_EXCEEDED',
  /** `[nats] url` is unset and no `nats-server` binary was found to run one. */
  NATS_SERVER_MISSING: 'NATS_SERVER_MISSING',
  /** pm2 refused or failed an operation. */
  PROCESS_MANAGER_ERROR: 'PROCESS_MANAGER_ERROR',
  /** Packing or unpacking an agent's archive failed; its data is left as it was. */
  ARCHIVE_ERROR: 'ARCHIVE_ERROR',
  /** The agent did not acknowledge a snapshot, so it was not stopped. */
  SNAPSHOT_FAILED: 'SNAPSHOT_FAILED',
  /** No embedding model could be loaded or reached; vector search falls back to BM25. */
  EMBEDDER_UNAVAILABLE: 'EMBEDDER_UNAVAILABLE',
  /** The language model's endpoint refused, failed or could not be reached (after its retries). */
  LLM_UNAVAILABLE: 'LLM_UNAVAILABLE',
  /** The model's output did not match the expected structure, even after a repair attempt. */
  LLM_OUTPUT_INVALID: 'LLM_OUTPUT_INVALID',
  /** A model asked for a tool call that cannot run as written: a tool it was not offered, or arguments that are not a JSON object. Fed back to the model once. */
  LLM_TOOL_CALL_INVALID: 'LLM_TOOL_CALL_INVALID',
  /** A request to an agent's MCP endpoint lacked the bearer token `[mcp] require_token` asks for, or had a wrong one; or nats-server refused a process's NATS identity a publish or subscription it may not make. */
  UNAUTHORIZED: 'UNAUTHORIZED',
  /** The caller cancelled the operation (an agent passivated or stopping cancels its model calls). */
  CANCELLED: 'CANCELLED',
  /** The world row (or other record) the request names does not exist. */
  NOT_FOUND: 'NOT_FOUND',
  /** The supervisor handling a long request (reconcile, start, stop…) stopped before it answered; a restarted supervisor finishes an interrupted reconcile by itself. */
  SUPERVISOR_LOST: 'SUPERVISOR_LOST',
  /** A reply over NATS did not match its protocol's schema (another version of Thymos answered, or a bug); the message names the subject. */
  INVALID_REPLY: 'INVALID_REPLY',
  /** A tool call was refused: not granted, an admin tool without `[tools] allow_admin`, its approval refused or timed out, or approved by its own caller. */
  TOOL_DENIED: 'TOOL_DENIED',
  /** A tool did not finish within its `timeoutMs`. */
  TOOL_TIMEOUT: 'TOOL_TIMEOUT',
  /** A tool's executor failed: the service answered non-2xx (its status in `details`), could not be reached, or the script threw or returned what is not a JSON value. */
  TOOL_FAILED: 'TOOL_FAILED',
  /** A tool's result was larger than its `outputLimitBytes`. */
  TOOL_OUTPUT_TOO_LARGE: 'TOOL_OUTPUT_TOO_LARGE',
  /** A tool's result did not match the `output` it declares. */
  TOOL_OUTPUT_INVALID: 'TOOL_OUTPUT_INVALID',
  /** A call waited for its turn under its tool's `maxConcurrent` or `ratePerMinute` until its timeout, or the service answered 429 or 503 and no retry fitted in the timeout. */
  TOOL_RATE_LIMITED: 'TOOL_RATE_LIMITED',
  /** An idempotency key an earlier call of the same tool used with other arguments. */
  IDEMPOTENCY_CONFLICT: 'IDEMPOTENCY_CONFLICT',
  /** A failure that no other code describes; a bug if seen. */
  INTERNAL: 'INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Where in a file an error was found, when it is known. */
export interface ErrorLocation {
  file?: string;
  line?: number;
  column?: number;
  /** Dotted path of the offending key or property, e.g. `lifecycle.threshold_active`. */
  path?: string;
}

export interface ThymosErrorOptions {
  cause?: unknown;
  location?: ErrorLocation;
  /** Extra machine-readable facts (a pid, a port) safe to send over the wire. */
  details?: Record<string, unknown>;
}

/** The single error class of Thymos. `code` is stable; `message` is for people. */
export class ThymosError extends Error {
  readonly code: ErrorCode;
  readonly location: ErrorLocation | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: ThymosErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ThymosError';
    this.code = code;
    this.location = options.location;
    this.details = options.details;
  }

  /** The form that crosses the wire (NATS replies, MCP error results). */
  toJSON(): WireError {
    const out: WireError = { code: this.code, message: this.message };
    if (this.location !== undefined) out.location = this.location;
    if (this.details !== undefined) out.details = this.details;
    return out;
  }
}

/** An error as it travels in a NATS reply or an MCP result: the one definition both sides validate with. */
export const WireErrorSchema = z.object({
  code: z.enum(Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
  location: z
    .object({ file: z.string().optional(), line: z.number().optional(), column: z.number().optional(), path: z.string().optional() })
    .optional(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type WireError = z.infer<typeof WireErrorSchema>;

/**
 * Whether `err` is a ThymosError (of `code`, when given). An error from another copy of Thymos
 * in the same process (a plugin with its own node_modules) counts too: it has the class's name
 * and one of its codes, though not this copy's prototype.
 */
export function isThymosError(err: unknown, code?: ErrorCode): err is ThymosError {
  const thymos =
    err instanceof ThymosError ||
    (err instanceof Error && err.name === 'ThymosError' && Object.hasOwn(ErrorCode, (err as { code?: unknown }).code as string));
  return thymos && (code === undefined || (err as ThymosError).code === code);
}

/** Wraps anything thrown into a ThymosError, keeping the original as `cause`. */
export function toThymosError(err: unknown, code: ErrorCode = ErrorCode.INTERNAL): ThymosError {
  if (isThymosError(err)) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ThymosError(code, message, { cause: err });
}

/** `code` when it is one of Thymos's codes (as a reply from another process says it), else `fallback`. */
export function knownCode(code: unknown, fallback: ErrorCode): ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ErrorCode, code) ? ErrorCode[code as keyof typeof ErrorCode] : fallback;
}
