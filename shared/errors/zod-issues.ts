import type { z } from 'zod';

import { ErrorCode, ThymosError } from './errors.js';

/** The value found at `path` inside `root`, or undefined. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** A short rendering of a value for an error message. */
export function preview(value: unknown, max = 60): string {
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/** Says what a zod issue expected and what came, in one clause. */
export function describeIssue(issue: z.core.$ZodIssue, root: unknown): string {
  if (issue.code === 'unrecognized_keys') {
    return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
  }
  if (issue.code === 'invalid_key') {
    // A record key failed its schema: say what a key must be, and which key it was.
    const inner = issue.issues[0]?.message ?? issue.message;
    return `${inner.replace(/^Invalid input: /, '')}; got the key ${preview(issue.path.at(-1))}`;
  }
  const got = valueAt(root, issue.path);
  const came = got === undefined ? 'nothing' : preview(got);
  const message = issue.message.replace(/^Invalid input: /, '');
  return `${message}; got ${came}`;
}

/** Every issue of a zod error as `path: expected …; got …`, joined. */
export function describeIssues(error: z.ZodError, root: unknown, max = 5): string {
  const parts = error.issues.slice(0, max).map((i) => `${i.path.map(String).join('.') || '(root)'}: ${describeIssue(i, root)}`);
  if (error.issues.length > max) parts.push(`…and ${error.issues.length - max} more`);
  return parts.join('; ');
}

/**
 * Validates input at an edge: the parsed value, or INVALID_INPUT saying `where: path: expected …;
 * got …`, located at the first issue's path (after `pathPrefix`, when the value sits inside a request).
 */
export function parseInput<T>(schema: z.ZodType<T>, raw: unknown, where: string, pathPrefix: readonly string[] = []): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const path = [...pathPrefix, ...(parsed.error.issues[0]?.path.map(String) ?? [])].join('.');
  throw new ThymosError(ErrorCode.INVALID_INPUT, `${where}: ${describeIssues(parsed.error, raw)}`, { location: { path } });
}
