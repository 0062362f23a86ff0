import type { Logger } from 'pino';

/** The logger every part of Thymos writes with (pino's; made by `createLogger` in shared/engines). */
export type { Logger };

/** A log line as pino writes it: numeric `level` (10 trace … 60 fatal), `msg`, `time` and the bindings. */
export interface LogRecord {
  level: number;
  msg?: string;
  [key: string]: unknown;
}

/**
 * The lines a logger writes, handed to whoever listens: each listener takes the records at or
 * above its own level. Only what the logger writes (its own level and above) passes through;
 * with nobody listening a line costs one call.
 */
export class LogFeed {
  readonly #listeners = new Set<{ min: number; take: (record: LogRecord) => void }>();

  /** Calls `take` with each record of level `min` or above until the returned function is called. */
  listen(min: number, take: (record: LogRecord) => void): () => void {
    const listener = { min, take };
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** pino's stream interface: one JSON line per call. */
  write(line: string): void {
    if (this.#listeners.size === 0) return;
    let record: LogRecord;
    try {
      record = JSON.parse(line) as LogRecord;
    } catch {
      return;
    }
    for (const l of this.#listeners) {
      if (record.level >= l.min) l.take(record);
    }
  }
}
