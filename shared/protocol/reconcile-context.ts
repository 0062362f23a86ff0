import { z } from 'zod';

import { AgentIdSchema } from '../domain/domain-schema.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import { describeIssues } from '../errors/zod-issues.js';
import { parseWireJson } from './parse-json.js';

/**
 * One agent's properties in a reconcile context. Any keys the application likes;
 * `relevance` (0..1), when present, is the agent's score and wins over every other source.
 */
export const AgentContextSchema = z
  .object({
    /** Forces the score: bypasses hysteresis and dwell time, not the capacity limits. */
    relevance: z.number().min(0).max(1).optional(),
  })
  .catchall(z.unknown());

/**
 * What a game loop or job system tells the supervisor about the world.
 *
 * @example
 * { "tick": 12, "global": { "player_location": "forge" }, "agents": { "bram_smith": { "in_party": true } } }
 */
export const ReconcileContextSchema = z
  .object({
    tick: z.number().int().min(0).optional(),
    global: z.record(z.string(), z.unknown()).default({}),
    agents: z.record(AgentIdSchema, AgentContextSchema).default({}),
  })
  .strict();
export type ReconcileContext = z.infer<typeof ReconcileContextSchema>;
export type ReconcileContextInput = z.input<typeof ReconcileContextSchema>;

/** Validates a context; an INVALID_CONTEXT error names each bad path, what was expected and what came. */
export function parseReconcileContext(raw: unknown, where = 'context'): ReconcileContext {
  const result = ReconcileContextSchema.safeParse(raw);
  if (!result.success) {
    const first = result.error.issues[0]!;
    const path = first.code === 'unrecognized_keys' ? [...first.path, first.keys[0]!] : first.path;
    throw new ThymosError(ErrorCode.INVALID_CONTEXT, `${where}: ${describeIssues(result.error, raw)}`, {
      location: { path: path.map(String).join('.') || '(root)' },
    });
  }
  return result.data;
}

/** Parses context text (a file or stdin) as JSON, then validates it. */
export function parseReconcileContextText(text: string, where = 'context'): ReconcileContext {
  let raw: unknown;
  try {
    raw = parseWireJson(text, where);
  } catch (err) {
    throw new ThymosError(ErrorCode.INVALID_CONTEXT, (err as Error).message, { cause: err, location: { path: '(root)' } });
  }
  return parseReconcileContext(raw, where);
}
