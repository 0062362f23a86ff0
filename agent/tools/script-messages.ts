import { z } from 'zod';

import { type WireError, WireErrorSchema } from '../../shared/errors/index.js';

/** What a Script's function reaches of the agent: the world store's operations and `publish`, each asked of the agent over the worker's port. */
export const SCRIPT_ASKS = ['get', 'query', 'set', 'patch', 'delete', 'tables', 'publish'] as const;
export type ScriptAsk = (typeof SCRIPT_ASKS)[number];

/** What a worker is started with: the one module it runs functions of. */
export interface ScriptWorkerData {
  path: string;
}

/** The facts of one call a script's context carries (its signal and the world are made in the worker). */
export interface ScriptCallFacts {
  agent: string;
  tool: string;
  caller: string;
  reason: string | undefined;
  callId: string;
  idempotencyKey: string;
}

/** What the agent sends a Script's worker: a call, the abort of one, and the answer to something a call asked. */
export type ToScriptWorker =
  | { kind: 'call'; id: number; export: string; input: Record<string, unknown>; facts: ScriptCallFacts }
  | { kind: 'abort'; id: number; reason: WireError }
  | { kind: 'answer'; ask: number; value?: unknown; error?: WireError };

/**
 * What a worker sends the agent: a call's end (its result in JSON text, none when it returned
 * nothing, or its error) and what a running call asks of the agent. Checked as it comes: the
 * script's own code shares the worker, and its port.
 */
export const FromScriptWorkerSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('done'), id: z.number(), json: z.string().optional() }),
  z.object({ kind: z.literal('failed'), id: z.number(), error: WireErrorSchema }),
  z.object({ kind: z.literal('ask'), id: z.number(), ask: z.number(), what: z.enum(SCRIPT_ASKS), args: z.array(z.unknown()) }),
]);
export type FromScriptWorker = z.infer<typeof FromScriptWorkerSchema>;
