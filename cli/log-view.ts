import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { prettyFactory } from 'pino-pretty';

/** How log lines are shown: as written (`json`), or readable, each with the name of its process when several are followed. */
export interface LogViewOptions {
  json: boolean;
  /** Colours: on a terminal, unless NO_COLOR is set. */
  colour: boolean;
  /** Prefix each line with the name of the process whose log it is. */
  label: boolean;
}

/** A line of a fleet log, readable: pino's JSON through pino-pretty on one line; nats-server's own lines as they are. */
export function lineFormatter(options: LogViewOptions): (name: string, line: string) => string {
  const pretty = options.json
    ? undefined
    : prettyFactory({
        colorize: options.colour,
        singleLine: true,
        translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
        ignore: 'pid,hostname,agent',
      });
  return (name, line) => {
    const text = pretty ? pretty(line).replace(/\n$/, '') : line;
    return options.label ? `${name.padEnd(16)} | ${text}` : text;
  };
}

/** The last `n` lines of a file (all of it is read: fleet logs are rotated by size by pm2 and Thymos's own writes). */
function lastLines(file: string, n: number): string[] {
  if (n === 0) return [];
  const lines = readFileSync(file, 'utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.slice(-n);
}

/** When a log line was written, for merging several logs: pino's ISO `time`, else undefined. */
function timeOf(line: string): string | undefined {
  return /^\{.*?"time":"([^"]+)"/.exec(line)?.[1];
}

/** The logs in `dir` (one per process: agents, the supervisor, nats-server), by name. */
export function logFiles(dir: string): Map<string, string> {
  if (!existsSync(dir)) return new Map();
  return new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .map((f) => [basename(f, '.log'), join(dir, f)]),
  );
}

/**
 * The last `n` lines of each log, merged in time order (a line without a time stays after the
 * line before it in its own log), then, with `follow`, what each log gains — a log that appears
 * later (an agent started since) is followed from its start. Runs until the process ends.
 */
export async function showLogs(
  files: () => Map<string, string>,
  n: number,
  follow: boolean,
  format: (name: string, line: string) => string,
  write: (text: string) => void,
): Promise<void> {
  const start = files();
  const merged: Array<{ at: string; name: string; line: string }> = [];
  for (const [name, file] of start) {
    let at = '';
    for (const line of lastLines(file, n)) {
      at = timeOf(line) ?? at;
      merged.push({ at, name, line });
    }
  }
  merged.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  for (const m of merged) write(`${format(m.name, m.line)}\n`);
  if (!follow) return;
  const offsets = new Map([...start].map(([name, file]) => [name, statSync(file).size]));
  const partial = new Map<string, string>();
  for (;;) {
    await sleep(250);
    for (const [name, file] of files()) {
      const size = existsSync(file) ? statSync(file).size : 0;
      let offset = offsets.get(name) ?? 0;
      if (size < offset) offset = 0; // truncated or rotated
      if (size === offset) continue;
      const buffer = Buffer.alloc(size - offset);
      const fd = openSync(file, 'r');
      try {
        readSync(fd, buffer, 0, buffer.length, offset);
      } finally {
        closeSync(fd);
      }
      offsets.set(name, size);
      const text = (partial.get(name) ?? '') + buffer.toString('utf8');
      const lines = text.split('\n');
      partial.set(name, lines.pop()!);
      for (const line of lines) write(`${format(name, line)}\n`);
    }
  }
}
