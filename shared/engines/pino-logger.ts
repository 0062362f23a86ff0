import { type LevelWithSilent, type Logger, pino } from 'pino';

import { LogFeed } from '../platform/logger.js';

export interface LoggerOptions {
  /** @default "info" */
  level?: LevelWithSilent;
  /** Bindings stamped on every line, e.g. `{ agent: "elder_rowan" }`. */
  bindings?: Record<string, unknown>;
  /** Where lines go: a file descriptor. @default 1 (stdout, which pm2 captures) */
  fd?: number;
  /** Appends lines to this file instead (created with its folder if missing). */
  file?: string | undefined;
  /** Also hand every line written to a `LogFeed` (found with `logFeedOf`), for listeners such as MCP sessions. */
  feed?: boolean;
}

const feeds = new WeakMap<object, LogFeed>();

/** The feed of the logger (or of the logger it is a child of) created with `feed: true`. */
export function logFeedOf(logger: Logger): LogFeed | undefined {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
  return typeof stream === 'object' && stream !== null ? feeds.get(stream) : undefined;
}

/**
 * One JSON logger per process. Hot paths take a child logger (`logger.child({...})`)
 * and rely on pino's level check, so a disabled level costs a function call.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const destination = options.file
    ? pino.destination({ dest: options.file, append: true, mkdir: true, sync: false })
    : pino.destination({ fd: options.fd ?? 1, sync: false });
  const settings = { level, base: { pid: process.pid, ...options.bindings }, timestamp: pino.stdTimeFunctions.isoTime };
  if (!options.feed || level === 'silent') return pino(settings, destination);
  const feed = new LogFeed();
  const streams = pino.multistream([
    { level, stream: destination },
    { level, stream: feed },
  ]);
  feeds.set(streams, feed);
  // logger.flush() flushes a stream that has flush(); multistream has none of its own.
  return pino(settings, Object.assign(streams, { flush: (cb?: (err?: Error) => void) => destination.flush(cb) }));
}
