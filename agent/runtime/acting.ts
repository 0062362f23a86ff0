import type { ToolCallRecord } from '../../shared/protocol/index.js';
import type { SamplingClient } from '../llm/agent-models.js';
import type { ToolStep } from '../llm/llm-provider.js';
import type { ToolLoop } from '../llm/tool-loop.js';
import type { TalkReply, TalkRequest } from './agent-behavior.js';
import type { ActOutcome, IntentAnswer } from './intent-answer.js';

export { type ActOutcome, INTENT_OUTCOMES, type IntentAnswer, type IntentCandidate, type IntentOutcome } from './intent-answer.js';

/** `[TOOL: what to do]` in a reply, as written (capitals and colon): the words up to the bracket are the intent. */
export const REPLY_MARKER = /\[TOOL:\s*([^\]\n]{1,500})\]/gu;

/** Words as the speaker hears them, before the ends are trimmed: `[TOOL: …]` taken out, runs of spaces made one. */
export function spoken(text: string): string {
  return text.replace(REPLY_MARKER, '').replace(/[ \t]{2,}/g, ' ');
}

/** A reply's words without its `[TOOL: …]`, as the speaker hears them and the agent remembers them. */
export function withoutMarkers(text: string): string {
  return spoken(text).trim();
}

/** Acts as the steps of a reply or decision: the call's record when one was made, else the outcome and the tool meant. */
export function actSteps(acts: readonly ActOutcome[]): ToolStep[] {
  return acts.map(({ answer, record }) =>
    record ? recordStep(record) : { tool: answer.tool ?? answer.candidates[0]?.tool ?? '', status: answer.outcome, ms: 0 },
  );
}

/** A call's record as a step: the tool, how it ended, and how long it took. */
export function recordStep(record: ToolCallRecord): ToolStep {
  return {
    tool: record.tool,
    call_id: record.call_id,
    status: record.status,
    ...(record.error ? { code: record.error.code } : {}),
    ms: record.duration_ms ?? 0,
  };
}

/** A reply with what its `[TOOL: …]` did: the words without them, and the acts among its tool calls. */
export function withActs(reply: TalkReply, acted: { reply: string; acts: readonly ActOutcome[] }): TalkReply {
  return acted.acts.length === 0
    ? reply
    : { ...reply, reply: acted.reply, tool_calls: [...(reply.tool_calls ?? []), ...actSteps(acted.acts)] };
}

/** Who asks plain words to be read, and what cancels the reading. */
export interface ReadRequest {
  /** The MCP client that asks, when it can sample: an `[llm.extraction]` of `mcp-sampling` reads the words with its model. */
  client?: SamplingClient | undefined;
  signal?: AbortSignal | undefined;
}

/** Who asks an act, and what cancels it (its words read as `ReadRequest` says). */
export interface ActRequest extends ReadRequest {
  caller: string;
  chain?: readonly string[] | undefined;
  /** The call's idempotency key, or what names it for the tool called (a job's keys). */
  idempotencyKey?: string | ((tool: string) => string) | undefined;
  /** Another worker may have made the call under its key (a job delivered again: `JobDelivery.elsewhere`). */
  elsewhere?: boolean | undefined;
}

/** Who a job's calls are made as, the idempotency key of each (see `jobCalls`), and whether another worker may have made them (`JobDelivery.elsewhere`). */
export interface JobCalls {
  caller: string;
  keyOf(tool: string): string;
  elsewhere: boolean;
}

/** What the agent does with its granted tools beyond a call by name: its models' tool loops, and plain words resolved to calls (agent/intents implements it). */
export interface Acting {
  /**
   * A use's model tool loop (`chain`: the agents a chain of Mcp calls passed through to here;
   * `sampler`: the MCP client whose model it is, when the use samples; `job`: the job it works,
   * whose caller and idempotency keys its calls carry); undefined when nothing is granted or the
   * use allows no steps.
   */
  loop(use: 'dialogue' | 'reasoning', chain?: readonly string[], sampler?: string, job?: JobCalls): ToolLoop | undefined;
  /** One call of a granted tool by name, through the governed path; refused before it is a record (a tool not granted, input that does not validate) is a throw. */
  call(tool: string, args: Record<string, unknown>, request: ActRequest): Promise<ToolCallRecord>;
  /** What the words mean among the granted tools; nothing runs. */
  resolve(intent: string, context?: string, request?: ReadRequest): Promise<IntentAnswer>;
  /** Resolves, and makes the call through the governed path when it is confident and complete. */
  act(intent: string, reason: string, request: ActRequest): Promise<ActOutcome>;
  /**
   * Acts on each `[TOOL: …]` of a reply to `request` (not one the offline composer wrote, which
   * quotes memories, and not one the line it answered holds); the words without them, and what each did.
   */
  actOnMarkers(reply: TalkReply, request: TalkRequest, signal: AbortSignal): Promise<{ reply: string; acts: ActOutcome[] }>;
}
