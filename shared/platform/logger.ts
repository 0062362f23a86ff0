import { type LevelWithSilent, type Logger, pino } from 'pino';

export type { Logger };

export interface LoggerOptions {
  /** @default "info" */
  level?: LevelWithSilent;
  /** Bindings stamped on every line, e.g. `{ agent: "elder_rowan" }`. */
  bindings?: Record<string, unknown>;
  /** Where lines go: a file descriptor. @default 1 (stdout, which pm2 captures) */
  fd?: number;
  /** Appends lines to this file instead (created with its folder if missing). */
  file?: string | undefined;
}

/**
 * One JSON logger per process. Hot paths take a child logger (`logger.child({...})`)
 * and rely on pino's level check, so a disabled level costs a function call.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    { level: options.level ?? 'info', base: { pid: process.pid, ...options.bindings }, timestamp: pino.stdTimeFunctions.isoTime },
    options.file ? pino.destination({ dest: options.file, append: true, mkdir: true, sync: false }) : pino.destination({ fd: options.fd ?? 1, sync: false }),
  );
}
