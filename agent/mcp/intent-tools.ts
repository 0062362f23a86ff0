import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ActOutcome, IntentAnswer } from '../runtime/acting.js';
import { REASON_MAX } from '../tools/tool-shapes.js';
import { callChain, callerKey, callerOf } from './declared-tools.js';
import { guard, samplingClient, type ToolContext, toolError } from './tool-kit.js';

/** The longest intent the endpoint takes; the resolver reads 2,000 characters and answers `too_long` past them. */
const INTENT_EDGE_MAX = 20_000;
const CONTEXT_MAX = 4_000;

/** One line that says what an answer is. */
function answerText(a: IntentAnswer): string {
  const sure = a.by === 'model' ? 'read by the model' : `confidence ${a.confidence}`;
  if (a.call) return `${a.call.tool} ${JSON.stringify(a.call.arguments)} (${sure})`;
  const candidates = a.candidates.map((c) => `${c.tool} ${c.score}`).join(', ') || 'none';
  if (a.outcome === 'incomplete')
    return `${a.tool} ${JSON.stringify(a.arguments ?? {})}, missing ${a.missing.join(', ')} (${sure}); candidates: ${candidates}`;
  return `no call: ${a.outcome}${a.note ? ` (${a.note})` : ''}; candidates: ${candidates}`;
}

/**
 * `resolve_intent {intent, context?}` (read-only: nothing runs) and `act {intent, reason}` (the
 * call made through the governed path when the resolution is confident and complete), on
 * every agent, over the tools its capabilities grant.
 */
export function registerIntentTools(ctx: ToolContext): void {
  const { server, runtime, persona } = ctx;
  const intent = z.string().max(INTENT_EDGE_MAX).describe('What is wanted, in plain words, e.g. "has order ORD-12345 shipped?"');
  const acting = () => {
    const a = runtime.acting;
    if (!a) throw new ThymosError(ErrorCode.NOT_FOUND, `${runtime.id} has no tools to resolve intents to`);
    return a;
  };
  server.registerTool(
    'resolve_intent',
    {
      title: `What would ${persona.name} call?`,
      description: `Resolves plain words to a call of one of ${persona.name}'s granted tools, by their names, descriptions, fields and examples only; nothing is executed. Answers {call?, candidates [{tool, score, why}], missing, confidence, outcome, tool?, arguments?}: no call when no tool fits well, two fit alike, or a required value is not given (then tool, the values found and the missing fields).`,
      inputSchema: {
        intent,
        context: z.string().max(CONTEXT_MAX).optional().describe('What else the values may come from, e.g. the conversation so far.'),
      },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async (args, extra) =>
      guard(async () => {
        const answer = await acting().resolve(args.intent, args.context, { client: samplingClient(server, extra), signal: extra.signal });
        return { content: [{ type: 'text', text: answerText(answer) }], structuredContent: { ...answer } };
      }),
  );
  server.registerTool(
    'act',
    {
      title: `Ask ${persona.name} to act`,
      description: `Resolves plain words as resolve_intent does and, when the call is confident and complete, makes it through ${persona.name}'s governed path (validation, permission, approval, record) with your reason. Otherwise nothing runs and the answer says why. Every act is remembered.`,
      inputSchema: {
        intent,
        reason: z
          .string()
          .trim()
          .min(1, 'expected a reason: why this is asked, in words')
          .max(REASON_MAX)
          .describe('Why this is asked; kept with the call.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    },
    async (args, extra) =>
      guard(async () => {
        const done = await acting().act(args.intent, args.reason, {
          caller: callerOf(server, extra),
          signal: extra.signal,
          idempotencyKey: callerKey(extra),
          chain: callChain(extra),
          client: samplingClient(server, extra),
        });
        return actResult(done);
      }),
  );
}

/** What `act` answers: the resolution, and the call's record when one was made; an error result when it was not made or failed. */
function actResult(done: ActOutcome): CallToolResult {
  const { answer, record } = done;
  if (done.error) {
    const refused = toolError(new ThymosError(done.error.code as ErrorCode, `${answerText(answer)}: not made: ${done.error.message}`));
    return { ...refused, structuredContent: { ...answer, error: done.error } };
  }
  const structured = {
    ...answer,
    ...(record
      ? {
          record: {
            call_id: record.call_id,
            status: record.status,
            ...(record.result !== undefined ? { result: record.result } : {}),
            ...(record.error ? { error: record.error } : {}),
          },
        }
      : {}),
  };
  if (record?.error) {
    const failed = toolError(new ThymosError(record.error.code, `${answerText(answer)}: ${record.error.message}`));
    return { ...failed, structuredContent: structured };
  }
  const said = record
    ? `${answerText(answer)} → ${record.status}${record.result !== undefined ? `: ${typeof record.result === 'string' ? record.result : JSON.stringify(record.result)}` : ''}`
    : answerText(answer);
  return { content: [{ type: 'text', text: said }], structuredContent: structured };
}
