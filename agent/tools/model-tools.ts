import { z } from 'zod';

import type { Tool, Tools } from '../../shared/domain/index.js';
import type { ToolCallRecord } from '../../shared/protocol/index.js';
import type { ModelTool, ToolStep } from '../llm/llm-provider.js';
import type { ToolLoop } from '../llm/tool-loop.js';
import type { ToolCaller } from './tool-caller.js';
import { inputShape } from './tool-shapes.js';

/** What a model is told of a tool besides its description: what a call does and what it waits for. */
function consequences(tool: Tool): string {
  const effect = {
    read_only: 'Reads only.',
    writes_local: 'Changes local state.',
    writes_external: 'Changes something outside.',
    irreversible: 'Cannot be undone.',
  }[tool.sideEffect];
  const permission =
    tool.permission === 'confirm' ? ' Waits for a person to approve it: the call answers "pending" and runs only once approved.' : '';
  const reason = tool.sideEffect !== 'read_only' ? ' Give a reason.' : '';
  return `${effect}${permission}${reason}`;
}

/**
 * The agent's granted tools as function definitions a model reads: name, description, what a
 * call does, and the parameters' JSON Schema (the same zod shape the governed path checks,
 * `reason` included). Executor details never reach a model.
 */
export function modelToolsOf(tools: Tools): ModelTool[] {
  const known = DEFINITIONS.get(tools);
  if (known) return known;
  const made = Object.entries(tools).map(([name, tool]) => ({
    name,
    description: `${/[.!?]$/.test(tool.description.trim()) ? tool.description.trim() : `${tool.description.trim()}.`} ${consequences(tool)}`,
    parameters: z.toJSONSchema(z.object(inputShape(tool)).strict(), { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
  }));
  DEFINITIONS.set(tools, made);
  return made;
}

/** The definitions of each set of tools, made once: a loop is made for every reply. */
const DEFINITIONS = new WeakMap<Tools, ModelTool[]>();

/** What the model reads of a call's record: how it ended, and its result or error. */
export function modelResultOf(record: ToolCallRecord): unknown {
  const base = { call_id: record.call_id, status: record.status, ...(record.replayed ? { replayed: true } : {}) };
  if (record.status === 'pending') return { ...base, note: `${record.tool} waits for a person's approval; it has not run` };
  if (record.status === 'interrupted' && record.interrupted_at !== undefined && record.decided_by === undefined)
    return {
      ...base,
      note: `whether ${record.tool} took effect is not known: a person decides whether it runs (again); it has not run now`,
    };
  if (record.error) return { ...base, error: { code: record.error.code, message: record.error.message } };
  if (record.status === 'running') return { ...base, note: `${record.tool} is running under this idempotency key` };
  return { ...base, result: record.result ?? null };
}

/** How a call ended, as a loop's step. */
function stepOf(record: ToolCallRecord): Omit<ToolStep, 'ms'> {
  return { tool: record.tool, call_id: record.call_id, status: record.status, ...(record.error ? { code: record.error.code } : {}) };
}

/**
 * A model's tool loop over the agent's governed path: the granted tools offered, each call made
 * by `caller` (e.g. `model:dialogue`) through `ToolCaller.call` — validation, reason, permission,
 * approval (a `confirm` call answers pending), limits, record and memory. A call refused before
 * it became a record (a tool not granted, input that does not validate) is answered to the model
 * as an error, coded, never thrown. Undefined when nothing is granted or `maxSteps` is 0.
 *
 * With `keyOf`, each call carries the idempotency key it names for the tool (a job's keys, see
 * `jobCalls`), so a job worked again makes its calls under the same keys; with `elsewhere`, another
 * worker may have made them (see `CallRequest.elsewhere`).
 */
export function toolLoopOf(
  caller: ToolCaller,
  options: {
    caller: string;
    maxSteps: number;
    budgetMs: number;
    chain?: readonly string[];
    keyOf?: (tool: string) => string;
    elsewhere?: boolean;
  },
): ToolLoop | undefined {
  const tools = modelToolsOf(caller.tools);
  if (tools.length === 0 || options.maxSteps === 0) return undefined;
  return {
    tools,
    maxSteps: options.maxSteps,
    budgetMs: options.budgetMs,
    run: async (name, args, signal) => {
      try {
        const key = options.keyOf?.(name);
        const record = await caller.call(name, args, {
          caller: options.caller,
          signal,
          ...(options.chain ? { chain: options.chain } : {}),
          ...(key ? { idempotencyKey: key } : {}),
          ...(options.elsewhere ? { elsewhere: true } : {}),
        });
        return { content: modelResultOf(record), step: stepOf(record) };
      } catch (err) {
        const e = err as { code?: string; message?: string };
        const code = typeof e.code === 'string' ? e.code : 'INTERNAL';
        return {
          content: { status: 'refused', error: { code, message: e.message ?? String(err) } },
          step: { tool: name, status: 'refused', code },
        };
      }
    },
  };
}
