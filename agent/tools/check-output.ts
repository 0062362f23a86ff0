import { z } from 'zod';

import type { Tool } from '../../shared/domain/index.js';
import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { outputShape } from './tool-shapes.js';

/** The result within the declared `output` (and the output limit, for what a Script returns). */
export function checkOutput(name: string, tool: Tool, result: unknown): unknown {
  const size = Buffer.byteLength(typeof result === 'string' ? result : (JSON.stringify(result) ?? ''));
  if (size > tool.outputLimitBytes)
    throw new ThymosError(
      ErrorCode.TOOL_OUTPUT_TOO_LARGE,
      `${name}: the result is ${size} bytes, over ${tool.outputLimitBytes} (outputLimitBytes)`,
      { details: { limit: tool.outputLimitBytes } },
    );
  const shape = outputShape(tool);
  if (!shape) return result ?? null;
  const parsed = z.object(shape).safeParse(result);
  if (!parsed.success)
    throw new ThymosError(
      ErrorCode.TOOL_OUTPUT_INVALID,
      `${name}: the result does not match its declared output: ${describeIssues(parsed.error, result)}`,
    );
  return parsed.data;
}
