/**
 * The worker thread a Script runs in (see `ScriptThread`): it imports one module, calls its
 * functions as the agent asks, fires a call's signal when the agent says so, and asks the agent
 * for what the context offers beyond the call's facts (the world store and `publish`).
 */
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';

import { ErrorCode, isThymosError, knownCode, ThymosError, type WireError } from '../../shared/errors/index.js';
import type { ScriptContext, ScriptFunction } from './script-context.js';
import type { FromScriptWorker, ScriptAsk, ScriptCallFacts, ScriptWorkerData, ToScriptWorker } from './script-messages.js';

const port = parentPort!;
const { path } = workerData as ScriptWorkerData;
/** Imported as the worker starts, so the first call finds it loaded; a failure is told to each call. */
const loaded = import(pathToFileURL(path).href) as Promise<Record<string, unknown>>;
loaded.catch(() => undefined);
const running = new Map<number, AbortController>();
const asked = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
let asks = 0;

const send = (message: FromScriptWorker) => port.postMessage(message);
const fromWire = (e: WireError) =>
  new ThymosError(knownCode(e.code, ErrorCode.TOOL_FAILED), e.message, { ...(e.details ? { details: e.details } : {}) });

port.on('message', (m: ToScriptWorker) => {
  if (m.kind === 'call') void call(m);
  else if (m.kind === 'abort') running.get(m.id)?.abort(fromWire(m.reason));
  else {
    const waiting = asked.get(m.ask);
    asked.delete(m.ask);
    if (m.error) waiting?.reject(fromWire(m.error));
    else waiting?.resolve(m.value);
  }
});

async function call(m: Extract<ToScriptWorker, { kind: 'call' }>): Promise<void> {
  const controller = new AbortController();
  running.set(m.id, controller);
  try {
    const fn = await exported(m.facts.tool, m.export);
    const result: unknown = await fn(m.input, contextOf(m.id, m.facts, controller.signal));
    send({ kind: 'done', id: m.id, json: jsonText(m.facts.tool, result) });
  } catch (err) {
    send({ kind: 'failed', id: m.id, error: wireOf(m.facts.tool, err) });
  } finally {
    running.delete(m.id);
  }
}

async function exported(tool: string, name: string): Promise<ScriptFunction> {
  let mod: Record<string, unknown>;
  try {
    mod = await loaded;
  } catch (err) {
    throw new ThymosError(ErrorCode.TOOL_FAILED, `${tool}: cannot load ${path}: ${(err as Error).message}`);
  }
  const fn = mod[name];
  if (typeof fn !== 'function')
    throw new ThymosError(
      ErrorCode.TOOL_FAILED,
      `${tool}: ${path} has no function export named ${JSON.stringify(name)} (it exports ${Object.keys(mod).join(', ') || 'nothing'})`,
    );
  return fn as ScriptFunction;
}

function contextOf(id: number, facts: ScriptCallFacts, signal: AbortSignal): ScriptContext {
  const ask = (what: ScriptAsk, ...args: unknown[]) =>
    new Promise<never>((resolve, reject) => {
      const n = ++asks;
      asked.set(n, { resolve: resolve as (value: unknown) => void, reject });
      send({ kind: 'ask', id, ask: n, what, args });
    });
  return {
    ...facts,
    signal,
    world: {
      get: (table, rowId) => ask('get', table, rowId),
      query: (query) => ask('query', query),
      set: (table, rowId, fields) => ask('set', table, rowId, fields),
      patch: (table, rowId, fields) => ask('patch', table, rowId, fields),
      delete: (table, rowId) => ask('delete', table, rowId),
      tables: () => ask('tables'),
    },
    publish: (event) => ask('publish', event),
  };
}

/**
 * What a script returned, as JSON has it (a Date becomes its string, as JSON.stringify makes
 * it): the record, the memory and the MCP answer carry only that. No return is none; a function,
 * a Symbol, a BigInt or a cycle is TOOL_FAILED naming what came.
 */
function jsonText(tool: string, result: unknown): string | undefined {
  if (result === undefined) return undefined;
  let text: string | undefined;
  let why: string;
  try {
    text = JSON.stringify(result);
    why = `a ${typeof result}`;
  } catch (err) {
    why = `a value JSON cannot hold (${(err as Error).message.replace(/\s+/g, ' ')})`;
  }
  if (text === undefined)
    throw new ThymosError(
      ErrorCode.TOOL_FAILED,
      `${tool}: the script returned ${why}; expected a JSON value: an object, array, string, number, boolean or null`,
    );
  return text;
}

/**
 * What a script threw, as it can be sent and recorded: a ThymosError keeps its code (its details
 * left out, and it says so, when they are no JSON); anything else is TOOL_FAILED with its message.
 */
function wireOf(tool: string, err: unknown): WireError {
  if (!isThymosError(err)) return { code: ErrorCode.TOOL_FAILED, message: `${tool}: ${err instanceof Error ? err.message : String(err)}` };
  const wire = { code: err.code, message: err.message, ...(err.location ? { location: { ...err.location } } : {}) };
  if (err.details === undefined) return wire;
  try {
    return { ...wire, details: JSON.parse(JSON.stringify(err.details)) as Record<string, unknown> };
  } catch {
    return { ...wire, message: `${err.message} (its details were left out: they are not JSON)` };
  }
}
