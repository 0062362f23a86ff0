import { readFileSync } from 'node:fs';

import { ErrorCode, isThymosError, ThymosError } from '../errors/errors.js';

/**
 * The line of the Pkl module where a path of the evaluated domain is written, found by its
 * keys in order: `tools.refund.executor.url` is the first `url` after `["refund"]`. A
 * heuristic for what Pkl's own errors do not cover (checks made after evaluation); undefined
 * when the file cannot be read or a key is not found in it (a domain spread over modules).
 */
export function pklLineOf(file: string, path: string): number | undefined {
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const keys = path
    .split('.')
    .flatMap((k) => k.split(/[[\]]/).filter(Boolean))
    .filter((k) => !/^\d+$/.test(k) && !/^\(.*\)$/.test(k));
  let at = -1;
  for (const [i, key] of keys.entries()) {
    const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pattern = new RegExp(`\\[\\s*"${escaped}"\\s*\\]|(^|[\\s{;])${escaped}\\s*(=|\\{)`);
    const found = lines.findIndex((line, n) => n > at && pattern.test(line));
    if (found < 0) return i === 0 ? undefined : at + 1;
    at = found;
  }
  return at + 1;
}

/** A SCHEMA_INVALID error of a check made after evaluation, with the line its path is written on when it can be found. */
export function withPklLine(err: unknown, file: string): unknown {
  if (!isThymosError(err, ErrorCode.SCHEMA_INVALID) || err.location?.line !== undefined || !err.location?.path) return err;
  const line = pklLineOf(file, err.location.path);
  if (line === undefined) return err;
  return new ThymosError(ErrorCode.SCHEMA_INVALID, err.message.replace(`domain schema ${file}: `, `domain schema ${file}:${line}: `), {
    location: { ...err.location, line },
    ...(err.details ? { details: err.details } : {}),
  });
}

/** The first location in a Pkl error that points into the application's files rather than the base module. */
export function pklErrorLocation(text: string, file: string): { file: string; line?: number } {
  const re = /\(file:\/\/([^,)]+), line (\d+)\)/g;
  let first: { file: string; line: number } | undefined;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const loc = { file: decodeURIComponent(m[1]!), line: Number(m[2]) };
    first ??= loc;
    if (!loc.file.endsWith('/schemas/Thymos.pkl')) return loc;
  }
  return first ?? { file };
}
