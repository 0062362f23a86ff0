import { pathToFileURL } from 'node:url';

import type { ScriptExecutor, Tool } from '../../shared/domain/tool-schema.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import type { WorldClient } from '../../shared/nats/world-client.js';
import type { EventPublisher } from '../runtime/agent-links.js';
import type { ExecutorContext } from './executor-context.js';

/** What a Script tool's function is called with, after its validated input. */
export interface ScriptContext {
  agent: string;
  tool: string;
  caller: string;
  reason: string | undefined;
  callId: string;
  idempotencyKey: string;
  /** Fires at the tool's timeout (or when the agent stops): stop work and return. */
  signal: AbortSignal;
  /** The shared world store, as the agent (reads and writes through the supervisor). */
  world: Pick<WorldClient, 'get' | 'query' | 'set' | 'patch' | 'delete' | 'tables'>;
  /** Publishes a world event as the agent. */
  publish: EventPublisher;
}

/** A Script tool's function. */
export type ScriptFunction = (input: Record<string, unknown>, context: ScriptContext) => unknown;

/**
 * Runs a Script tool: the named export of the application's compiled module (loaded once,
 * as Node caches modules), called with the input and a context. What it returns is the
 * result, once it is a JSON value (else TOOL_FAILED); what it throws is TOOL_FAILED with its message (a ThymosError keeps its code). A
 * function that ignores the signal is answered TOOL_TIMEOUT at the timeout all the same, and
 * whatever it still does after that is not recorded.
 */
export async function runScript(tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
  const exec = tool.executor as ScriptExecutor;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(exec.path).href)) as Record<string, unknown>;
  } catch (err) {
    throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: cannot load ${exec.path}: ${(err as Error).message}`);
  }
  const fn = mod[exec.export];
  if (typeof fn !== 'function') throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: ${exec.path} has no function export named ${JSON.stringify(exec.export)} (it exports ${Object.keys(mod).join(', ') || 'nothing'})`);
  const context: ScriptContext = {
    agent: ctx.agent,
    tool: ctx.tool,
    caller: ctx.caller,
    reason: ctx.reason,
    callId: ctx.callId,
    idempotencyKey: ctx.idempotencyKey,
    signal: ctx.signal,
    get world() {
      return ctx.world().world;
    },
    publish: (event) => ctx.world().publish(event),
  };
  let result: unknown;
  try {
    result = await (fn as ScriptFunction)(input, context);
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (err instanceof ThymosError) throw wireSafe(err);
    throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return jsonValue(ctx.tool, result);
}

/**
 * What a script returned, as JSON has it (a Date becomes its string, as JSON.stringify makes
 * it): the record, the memory and the MCP answer carry only that. No return is null; a function,
 * a Symbol, a BigInt or a cycle is TOOL_FAILED naming what came.
 */
function jsonValue(tool: string, result: unknown): unknown {
  if (result === undefined) return undefined;
  let text: string | undefined;
  let why: string;
  try {
    text = JSON.stringify(result);
    why = `a ${typeof result}`;
  } catch (err) {
    why = `a value JSON cannot hold (${(err as Error).message.replace(/\s+/g, ' ')})`;
  }
  if (text === undefined) throw new ThymosError(ErrorCode.TOOL_FAILED, `${tool}: the script returned ${why}; expected a JSON value: an object, array, string, number, boolean or null`);
  return JSON.parse(text) as unknown;
}

/** A script's own ThymosError as it can be recorded and sent: details that are no JSON (a cycle, a BigInt) are left out, and it says so. */
function wireSafe(err: ThymosError): ThymosError {
  try {
    JSON.stringify(err.details);
    return err;
  } catch {
    return new ThymosError(err.code, `${err.message} (its details were left out: they are not JSON)`, { ...(err.location ? { location: err.location } : {}), cause: err });
  }
}
