import { z } from 'zod';

import { fillUrl, parseUrlTemplate, type Tool, UrlInputError } from '../../shared/domain/index.js';
import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { RuntimeGate } from '../runtime/runtime-ports.js';
import { subprocessArgs } from './subprocess-executor.js';
import { inputShape } from './tool-shapes.js';

/** What the checks of a call read of the agent and its settings. */
export interface CallChecksOptions {
  agent: string;
  gate: RuntimeGate;
  allowAdmin: boolean;
  /** How many agents a chain of Mcp calls may pass through (`[tools] max_hops`). */
  maxHops: number;
}

/**
 * What a call must pass before anything is saved or waits for approval: its input against the
 * tool's declared shape (and, for an Http or Subprocess tool, the URL or argument vector it
 * would make), then whether it may run now — a chain of Mcp calls that loops or grows past
 * `max_hops`, an `admin` tool without `allow_admin`, a tool with side effects while listening.
 */
export class CallChecks {
  readonly #o: CallChecksOptions;
  readonly #inputs = new Map<string, z.ZodObject>();

  constructor(options: CallChecksOptions) {
    this.#o = options;
  }

  /** The validated input of a call of `name`, reason included; INVALID_INPUT naming the field that is wrong. */
  validate(name: string, tool: Tool, args: Record<string, unknown>): Record<string, unknown> {
    let schema = this.#inputs.get(name);
    if (!schema) this.#inputs.set(name, (schema = z.object(inputShape(tool)).strict()));
    const parsed = schema.safeParse(args);
    if (!parsed.success) {
      throw new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${name}: ${describeIssues(parsed.error, args)}`, {
        location: { path: ['arguments', ...(parsed.error.issues[0]?.path ?? []).map(String)].join('.') },
      });
    }
    const input = parsed.data as Record<string, unknown>;
    // Where an Http call would go, and a program's arguments, are settled before anything is saved or waits for approval.
    if (tool.executor.kind === 'subprocess') subprocessArgs(name, tool.executor, input);
    if (tool.executor.kind === 'http') {
      try {
        fillUrl(parseUrlTemplate(tool.executor.url), input);
      } catch (err) {
        if (err instanceof UrlInputError)
          throw new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${name}: ${err.message}`, {
            location: { path: `arguments.${err.field}` },
          });
        throw err;
      }
    }
    return input;
  }

  /** Why this call may not run now, or undefined. */
  refusal(name: string, tool: Tool, chain: readonly string[]): ThymosError | undefined {
    if (tool.executor.kind === 'mcp' && tool.executor.agent != null) {
      const path = [...chain, this.#o.agent];
      const shown = [...path, tool.executor.agent].join(' → ');
      if (path.includes(tool.executor.agent))
        return new ThymosError(
          ErrorCode.TOOL_DENIED,
          `${name} would call ${tool.executor.agent}, which this chain of calls passed through already (${shown}): refused rather than looped`,
        );
      if (path.length + 1 > this.#o.maxHops)
        return new ThymosError(
          ErrorCode.TOOL_DENIED,
          `${name} would make a chain of ${path.length + 1} agents (${shown}); [tools] max_hops is ${this.#o.maxHops}`,
        );
    }
    if (tool.permission === 'admin' && !this.#o.allowAdmin)
      return new ThymosError(ErrorCode.TOOL_DENIED, `${name} is an admin tool; it runs only with [tools] allow_admin = true`);
    if (tool.sideEffect !== 'read_only' && !this.#o.gate.isActive())
      return new ThymosError(
        ErrorCode.AGENT_NOT_ACTIVE,
        `${this.#o.agent} is listening (passive): it runs only read-only tools now, and ${name} is ${tool.sideEffect}`,
      );
    return undefined;
  }
}
