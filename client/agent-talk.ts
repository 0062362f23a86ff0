import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';

import { describeIssues, ErrorCode, ThymosError, WireErrorSchema } from '../shared/errors/index.js';
import { ToolStepSchema } from '../shared/protocol/index.js';

export interface TalkOptions {
  /** Who is speaking; names the conversation thread. @default "stranger" */
  speaker?: string;
  /**
   * Called with the reply's text as the agent's model writes it, piece by piece, in order: the
   * greeting and a line break when the line opens the conversation, then the reply. The pieces
   * add up to the answer's `text`. Without it the reply comes whole. Should it throw, the pieces
   * after stop coming to it and the talk throws that once it has ended.
   */
  onText?: (piece: string) => void;
  /** Aborting it cancels the talk: the agent stops its model's request; the words said so far stay in the conversation, tagged `cut`. */
  signal?: AbortSignal;
  /** How long the reply may go quiet (no piece, no answer) before the talk fails with TIMEOUT. @default 60000 */
  timeoutMs?: number;
}

/** What `talk_to_<id>` answers, as the library reads it. */
export const TalkAnswerSchema = z.object({
  greeting: z.string().optional(),
  reply: z.string(),
  /** The memories the reply drew on, as `recall` shows them. */
  grounding: z.array(z.record(z.string(), z.unknown())),
  emotional_tone: z.string().optional(),
  actions: z.array(z.string()).optional(),
  state_changes: z.record(z.string(), z.unknown()).optional(),
  learned: z.array(z.string()).optional(),
  model: z.string().optional(),
  tool_calls: z.array(ToolStepSchema).optional(),
});
export type TalkAnswer = z.infer<typeof TalkAnswerSchema> & {
  /** What the speaker hears: the greeting and a line break when there is one, then the reply. */
  text: string;
};

/**
 * Says `message` to the agent behind `client` (`talk_to_<id>`), streaming the reply into
 * `onText` when given (MCP progress notifications). A refused or failed talk throws its coded
 * ThymosError (AGENT_NOT_ACTIVE, LLM_UNAVAILABLE after the pieces already passed on, …); a
 * cancelled one throws CANCELLED.
 */
export async function talkTo(client: Client, id: string, message: string, options: TalkOptions = {}): Promise<TalkAnswer> {
  const args = { message, ...(options.speaker !== undefined ? { speaker: options.speaker } : {}) };
  const onText = options.onText;
  // What onText throws would vanish inside the MCP client: it is kept, the talk is let finish, and it is thrown then.
  let thrown: { err: unknown } | undefined;
  const onprogress = ({ message: piece }: { message?: string | undefined }) => {
    if (piece === undefined || thrown) return;
    try {
      onText?.(piece);
    } catch (err) {
      thrown = { err };
    }
  };
  let result: Awaited<ReturnType<Client['callTool']>>;
  try {
    result = await client.callTool({ name: `talk_to_${id}`, arguments: args }, undefined, {
      ...(onText ? { onprogress, resetTimeoutOnProgress: true } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      timeout: options.timeoutMs ?? 60_000,
    });
  } catch (err) {
    if (options.signal?.aborted) throw new ThymosError(ErrorCode.CANCELLED, `the talk to ${id} was cancelled`, { cause: err });
    const timedOut = (err as { code?: unknown }).code === -32001;
    throw new ThymosError(timedOut ? ErrorCode.TIMEOUT : ErrorCode.INTERNAL, `talk to ${id}: ${(err as Error).message}`, { cause: err });
  }
  if (thrown) throw thrown.err;
  if (result.isError === true) {
    const wire = WireErrorSchema.safeParse(result._meta?.['thymos/error']);
    const text = JSON.stringify(result.content).slice(0, 300);
    throw wire.success
      ? new ThymosError(wire.data.code, wire.data.message, { details: wire.data.details })
      : new ThymosError(ErrorCode.INTERNAL, `talk to ${id} failed: ${text}`);
  }
  const answer = TalkAnswerSchema.safeParse(result.structuredContent);
  if (!answer.success)
    throw new ThymosError(
      ErrorCode.INVALID_REPLY,
      `talk_to_${id} answered something that is not a talk answer: ${describeIssues(answer.error, result.structuredContent)}`,
    );
  const { data } = answer;
  return { ...data, text: data.greeting !== undefined ? `${data.greeting}\n${data.reply}` : data.reply };
}
