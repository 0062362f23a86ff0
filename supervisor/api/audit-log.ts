import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

import type { Logger } from '../../shared/platform/index.js';

/** One control action: who asked, what, when, and how it ended. */
export interface AuditEntry {
  at: string;
  /** The op, e.g. `reconcile`, `stop`. */
  op: string;
  /** Who sent it, by the subject nats-server let it publish on: `client`, or `agent-<id>` for an agent's own call. */
  by: string;
  /** Which process, as the request says of itself (`Thymos-By`: program#pid@host; `unknown` when it does not): not proof. */
  via?: string;
  /** The agent it named, if any. */
  id?: string;
  /** `ok`, or the error code. */
  result: string;
  /** The host whose supervisor answered (`[host] name`); set by the log. */
  host?: string;
  duration_ms: number;
  /** A reconcile's dry run, or what changed. */
  details?: Record<string, unknown>;
}

/**
 * Appends control actions to a JSON-lines file (`<data_dir>/logs/audit.jsonl`, mode 0600), in
 * the order they end. A write that fails is logged and does not fail the action.
 */
export class AuditLog {
  readonly #path: string;
  readonly #logger: Logger;
  readonly #host: string | undefined;
  #tail: Promise<void> = Promise.resolve();

  /** `host`, when given, is written into every entry. */
  constructor(path: string, logger: Logger, host?: string) {
    this.#path = path;
    this.#logger = logger;
    this.#host = host;
  }

  record(entry: AuditEntry): Promise<void> {
    this.#tail = this.#tail.then(async () => {
      try {
        await mkdir(dirname(this.#path), { recursive: true });
        await appendFile(this.#path, `${JSON.stringify(this.#host === undefined ? entry : { ...entry, host: this.#host })}\n`, {
          mode: 0o600,
        });
      } catch (err) {
        this.#logger.warn({ err, entry }, 'audit entry not written');
      }
    });
    return this.#tail;
  }
}

const AUDITED_FIELDS = new Set(['call_id', 'tool', 'decision', 'delivered', 'woken']);

/** What a report changed, for an entry's `details`: its non-empty lists of agents (at most 100 each), and an approval's call, tool and decision. */
export function auditDetails(result: unknown): Record<string, unknown> | undefined {
  if (!result || typeof result !== 'object') return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result)) {
    if (Array.isArray(v) && v.length > 0 && v.length <= 100 && v.every((x) => typeof x === 'string')) out[k] = v;
    // An approval's: which call, of which tool, decided how, and whether the agent has it yet.
    else if (AUDITED_FIELDS.has(k) && (typeof v === 'string' || typeof v === 'boolean')) out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
