import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { ErrorCode, ThymosError } from '../errors/errors.js';

const TOKEN_FILE = 'mcp-token';

/** Where an agent keeps its MCP bearer token: `<data_dir>/agents/<id>/mcp-token`. */
export function agentTokenPath(dataPath: string, id: string): string {
  return join(dataPath, 'agents', id, TOKEN_FILE);
}

/**
 * The agent's token, made on first use: 32 random bytes, base64url, in a file only its owner
 * can read or write (0600). A file left readable by others is narrowed to 0600. Two processes
 * racing to make it end with the same token: the file is created exclusively.
 */
export function ensureAgentToken(path: string): string {
  try {
    writeFileSync(path, randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ThymosError(ErrorCode.DATABASE_ERROR, `cannot write the MCP token ${path}: ${(err as Error).message}`, { cause: err });
    }
  }
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  const token = readFileSync(path, 'utf8').trim();
  if (token.length < 32)
    throw new ThymosError(
      ErrorCode.DATABASE_ERROR,
      `the MCP token in ${path} is too short (${token.length} characters); delete the file to make a new one`,
    );
  return token;
}

/** The token of an agent, or undefined when it has none (tokens not required, or never started). */
export function readAgentToken(dataPath: string, id: string): string | undefined {
  try {
    return readFileSync(agentTokenPath(dataPath, id), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Whether an `Authorization` header carries this bearer token, compared in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return false;
  const given = Buffer.from(m[1]!);
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}
