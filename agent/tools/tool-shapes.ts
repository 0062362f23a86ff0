import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { compilePattern, needsReason, type Tool, type ToolField } from '../../shared/domain/index.js';
/** The longest string a field takes when it declares no `max`. */
export const STRING_MAX = 10_000;
/** The longest reason a call may give. */
export const REASON_MAX = 2_000;

function scalar(f: ToolField): z.ZodType {
  switch (f.type) {
    case 'enum':
      return z.enum(f.values as [string, ...string[]]);
    case 'boolean':
      return z.boolean();
    case 'number':
    case 'integer': {
      let n = f.type === 'integer' ? z.number().int() : z.number();
      if (f.min != null) n = n.min(f.min);
      if (f.max != null) n = n.max(f.max);
      return n;
    }
    default: {
      let s = z.string().max(f.max ?? STRING_MAX);
      if (f.min != null) s = s.min(f.min);
      // JSON Schema's `pattern` matches anywhere; the whole value must match, so it is anchored.
      // RE2 matches it: zod's .regex() would backtrack on the agent's only thread. Clients still see it.
      if (f.pattern != null)
        s = s.refine(compilePattern(f.pattern).matches, `expected a value matching ${f.pattern}`).meta({ pattern: `^(?:${f.pattern})$` });
      return s;
    }
  }
}

function fieldSchema(f: ToolField): z.ZodType {
  let out: z.ZodType = f.list ? z.array(scalar(f)).max(f.maxItems) : scalar(f);
  if (f.description) out = out.describe(f.description);
  return f.required ? out : out.optional();
}

/** The zod shape of a tool's arguments: its input fields and `reason` (required when the tool needs one). */
export function inputShape(tool: Tool): Record<string, z.ZodType> {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, f] of Object.entries(tool.input)) shape[name] = fieldSchema(f);
  const reason = z
    .string()
    .trim()
    .min(1, 'expected a reason: why this call, in words')
    .max(REASON_MAX)
    .describe('Why this call is made; kept with the record of the call.');
  shape.reason = needsReason(tool) ? reason : reason.optional();
  return shape;
}

/** The zod shape of a tool's result, when it declares `output`. */
export function outputShape(tool: Tool): Record<string, z.ZodType> | undefined {
  if (!tool.output) return undefined;
  return Object.fromEntries(Object.entries(tool.output).map(([name, f]) => [name, fieldSchema(f)]));
}

/** MCP's annotations for a tool's classes, so stock clients prompt where they should. */
export function toolAnnotations(tool: Tool): ToolAnnotations {
  return {
    readOnlyHint: tool.sideEffect === 'read_only',
    destructiveHint: tool.sideEffect === 'irreversible',
    idempotentHint: tool.idempotencyKey != null,
    openWorldHint: tool.executor.kind !== 'script',
  };
}
