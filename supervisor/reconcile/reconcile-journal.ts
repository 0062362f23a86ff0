import { mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { toThymosError } from '../../shared/errors/index.js';
import { type Logger, writeAtomic } from '../../shared/platform/index.js';
import { parseReconcileContext, type ReconcileContext } from '../../shared/protocol/index.js';

/**
 * Where the context of a reconcile that is moving agents is kept until it ends, so that whoever
 * runs the fleet next finishes it: on one host a file of its data directory (`ReconcileJournal`),
 * under placement by lease a key of the fleet's placement bucket (`ClusterJournal`), which the host
 * that takes the coordinator role over reads.
 */
export interface Journal {
  /** Notes the context of a reconcile that is about to move agents; a failure is logged, never thrown. */
  begin(context: ReconcileContext): Promise<void>;
  /** The reconcile ended: nothing is left to finish. */
  end(): Promise<void>;
  /** Runs `finish` on the context an interrupted reconcile left, if there is one; undefined when none, or when it could not be finished. */
  resume<T>(finish: (context: ReconcileContext, since: string) => Promise<T>): Promise<{ since: string; result: T } | undefined>;
}

/**
 * The context of a reconcile that is moving agents, kept in `<data>/run/reconcile.pending.json`
 * until it ends, so a supervisor killed in the middle finishes it after its restart. Written
 * atomically: a crash leaves the previous file or the new one, never half of one.
 */
export class ReconcileJournal implements Journal {
  readonly #dir: string;
  readonly #file: string;
  readonly #logger: Logger;

  constructor(runDir: string, logger: Logger) {
    this.#dir = runDir;
    this.#file = join(runDir, 'reconcile.pending.json');
    this.#logger = logger;
  }

  /** Notes the context of a reconcile that is about to move agents. */
  async begin(context: ReconcileContext): Promise<void> {
    try {
      mkdirSync(this.#dir, { recursive: true });
      writeAtomic(this.#file, JSON.stringify({ at: new Date().toISOString(), context }));
    } catch (err) {
      this.#logger.warn(
        { err: (err as Error).message },
        'the reconcile journal was not written: a crash now would leave this reconcile unfinished',
      );
    }
  }

  /** The reconcile ended: nothing is left to finish. */
  async end(): Promise<void> {
    try {
      rmSync(this.#file, { force: true });
    } catch (err) {
      this.#logger.warn(
        { err: (err as Error).message },
        'the reconcile journal was not removed: a restart would run this finished reconcile again (harmless: nothing left to move)',
      );
    }
  }

  /**
   * Runs `finish` on the context a killed supervisor left unfinished, if there is one.
   * Resolves to undefined when there is nothing to finish; a journal that cannot be read,
   * or whose reconcile fails (it no longer fits the domain), is set aside as
   * `reconcile.pending.json.bad` with an error in the log.
   */
  async resume<T>(finish: (context: ReconcileContext, since: string) => Promise<T>): Promise<{ since: string; result: T } | undefined> {
    let text: string;
    try {
      text = readFileSync(this.#file, 'utf8');
    } catch {
      return undefined;
    }
    try {
      const raw = JSON.parse(text) as { at?: unknown; context?: unknown };
      const since = typeof raw.at === 'string' ? raw.at : 'unknown';
      const context = parseReconcileContext(raw.context, `${this.#file}: context`);
      return { since, result: await finish(context, since) };
    } catch (err) {
      const e = toThymosError(err);
      this.#logger.error(
        { code: e.code, err: e.message, file: this.#file },
        'the interrupted reconcile could not be finished; its journal is set aside',
      );
      try {
        renameSync(this.#file, `${this.#file}.bad`);
      } catch {
        // Already gone: nothing to set aside.
      }
      return undefined;
    }
  }
}
