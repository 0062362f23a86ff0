import { randomUUID } from 'node:crypto';

import { QUESTION_TAG, SAID_TAG } from '../consolidation/claims.js';
import { type LlmMessage } from '../llm/llm-provider.js';
import { ANSWER_SHAPES, type DialogueReply, DialogueReplySchema } from '../llm/llm-tasks.js';
import { statements } from '../llm/offline-provider.js';
import { goalsLine, personaPrompt } from '../llm/persona-prompt.js';
import { generateStructured } from '../llm/structured-output.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { MemoryRecord, RecallHit } from '../memory/memory-record.js';
import { withoutMarkers } from './acting.js';
import type { AgentBehavior, AgentBehaviorContext, TalkReply, TalkRequest } from './agent-behavior.js';
import { buildContext, contextBlocks, type ContextPacket } from './context-packet.js';
import { ReplyStream } from './reply-stream.js';

/** Facts an agent took from a conversation. */
const LEARNED_TAG = 'learned';
/** A reply the speaker heard only in part. */
export const CUT_TAG = 'cut';
/** The persona's greeting, said when a conversation opens. */
const GREETING_TAG = 'greeting';
const GROUNDING = 5;

/** What was said to the agent, as it is remembered. */
export function heardLine(request: TalkRequest): string {
  return `${request.speaker} said to me: ${request.message}`;
}

/**
 * Memories that may ground a reply: not the agent's own replies, not lines that only asked
 * something (`question`: asked the same thing twice, it answers from what it knows, not from the asking), and not
 * a heard turn when the fact learned from it is there already.
 */
export async function groundingFor(ctx: AgentBehaviorContext, request: TalkRequest, k: number): Promise<RecallHit[]> {
  const echo = heardLine(request);
  // Its own words are left out so it does not quote itself; lines that only asked tell nothing.
  const grounds = (m: MemoryRecord) => !m.tags.includes(SAID_TAG) && !m.tags.includes(QUESTION_TAG) && m.content !== echo;
  const hits = await ctx.recall(request.message, { k: k + 2, filter: grounds });
  const told = new Set(hits.filter((h) => h.memory.tags.includes(LEARNED_TAG)).flatMap((h) => h.memory.derived_from ?? []));
  return hits.filter((h) => !told.has(h.memory.id)).slice(0, k);
}

/**
 * How agents talk unless an application brings its own behaviour: through the
 * `[llm.dialogue]` provider (offline by default). The prompt holds the persona (traits,
 * speech style, background, goals), the agent's disposition and the context packet for the
 * message (`buildContext`: facts, summaries, turns and open questions within
 * `[llm.dialogue] context_tokens`, this conversation's turns as messages); the answer is
 * `{message, emotional_tone, actions, state_changes, learned}`. The offline composer is
 * briefed with what recall finds for the message.
 *
 * The conversation is an append-only thread per speaker. The first talk with a speaker opens it
 * with the persona's `greeting`, when it has one (a turn of the agent's, and `greeting` in the
 * reply). Then each exchange: the heard line, then the reply with
 * the model that wrote it and the memories it drew on (`derived_from`). Each learned fact
 * becomes a memory of its own that points to the turn it was told in.
 *
 * With `request.onText` the reply streams (`ReplyStream`): the greeting at once, then the words
 * of the reply as the model writes them. A reply cut off (cancelled, or the model's stream broke)
 * after some words were sent is kept as far as it was heard, tagged `cut` (`keepCut`).
 */
export class DialogueBehavior implements AgentBehavior {
  async talk(ctx: AgentBehaviorContext, request: TalkRequest): Promise<TalkReply> {
    const provider = ctx.model('dialogue');
    // Streamed, the greeting goes first, before recall: it is known already; the reply's words follow as the model writes them.
    const greeting = openingGreeting(ctx, request.speaker);
    if (greeting !== undefined) request.onText?.(`${greeting}\n`);
    const grounding = await groundingFor(ctx, request, GROUNDING);
    const memories = grounding.map((h) => ({ content: h.memory.content, strength: h.score.strength, kind: h.memory.source.kind }));
    const packet = await buildContext(ctx, 'dialogue', request.message, ctx.contextBudget('dialogue'), request.speaker);
    const messages: LlmMessage[] = [{ role: 'system', content: systemPrompt(ctx, packet) }];
    const echo = heardLine(request);
    for (const turn of packet.items) {
      if (turn.thread !== undefined && turn.content !== echo)
        messages.push({ role: turn.by === ctx.id ? 'assistant' : 'user', content: turn.content });
    }
    if (greeting !== undefined) messages.push({ role: 'assistant', content: greeting });
    messages.push({ role: 'user', content: `${request.speaker}: ${request.message}` });
    const brief = {
      task: 'dialogue' as const,
      persona: ctx.definition.persona,
      speaker: request.speaker,
      message: request.message,
      memories,
    };
    const model = (name: string) => (provider.kind === 'offline' ? 'offline' : `${provider.kind}:${name}`);
    const stream = request.onText ? new ReplyStream(request.onText) : undefined;
    let answer: Awaited<ReturnType<typeof generateStructured<DialogueReply>>>;
    try {
      // A model that answers in prose even after a repair is still heard: its text is the reply.
      answer = await generateStructured(provider, { messages, signal: ctx.signal, brief }, DialogueReplySchema, {
        prose: (text) => ({ message: text, emotional_tone: 'neutral', actions: [], state_changes: {}, learned: [] }),
        spent: (r) => ctx.spent('dialogue', provider, r),
        tools: ctx.tools('dialogue'),
        stream,
      });
    } catch (err) {
      if (stream?.sent) await keepCut(ctx, request, greeting, stream.said, model(provider.info().model));
      throw err;
    }
    const { result } = answer;
    const value = { ...answer.value, message: stream ? stream.settle(answer.value.message) : answer.value.message };
    ctx.feel(value.emotional_tone, value.state_changes);
    // One write: a talk that fails stores nothing, so the next one opens the conversation again.
    await ctx.rememberAll([
      ...(greeting !== undefined ? [greetingTurn(ctx.id, request.speaker, greeting)] : []),
      ...exchange(ctx.id, request, value, grounding, model(result.model)),
    ]);
    return {
      ...(greeting !== undefined ? { greeting } : {}),
      reply: value.message,
      grounding,
      tone: value.emotional_tone,
      actions: value.actions,
      state_changes: value.state_changes,
      learned: value.learned,
      model: model(result.model),
      ...(result.tool_steps?.length ? { tool_calls: result.tool_steps } : {}),
    };
  }
}

/**
 * The persona's greeting when this talk opens the conversation with `speaker` (its thread has
 * no turn yet), else undefined: a speaker is greeted once, not at every line.
 */
function openingGreeting(ctx: AgentBehaviorContext, speaker: string): string | undefined {
  const greeting = ctx.definition.persona.greeting;
  return greeting && ctx.recentTurns(speaker, 1).length === 0 ? greeting : undefined;
}

/**
 * A reply the speaker heard only in part (cancelled, or the model's stream broke off): the line
 * and the words said, the reply's turn tagged `cut`, so the conversation shows what was heard.
 * Nothing is learned from it. A failure to store it is logged; the talk's own error stands.
 */
async function keepCut(
  ctx: AgentBehaviorContext,
  request: TalkRequest,
  greeting: string | undefined,
  said: string,
  model: string,
): Promise<void> {
  const turns = exchange(
    ctx.id,
    request,
    { message: said, emotional_tone: 'neutral', actions: [], state_changes: {}, learned: [] },
    [],
    model,
  );
  turns[1]!.tags = [...turns[1]!.tags!, CUT_TAG];
  try {
    await ctx.rememberAll([...(greeting !== undefined ? [greetingTurn(ctx.id, request.speaker, greeting)] : []), ...turns]);
  } catch (err) {
    ctx.logger.warn({ err, speaker: request.speaker }, 'the words of a cut reply could not be kept');
  }
}

/** The greeting as the conversation's first turn, said by the agent. */
function greetingTurn(self: string, speaker: string, greeting: string): NewMemory {
  return {
    content: `I told ${speaker}: ${greeting}`,
    tags: ['dialogue', SAID_TAG, GREETING_TAG],
    importance: 0.1,
    source: { kind: 'dialogue', by: self, thread: speaker },
  };
}

/** The turns of one exchange, in order, and the facts learned from it. */
function exchange(self: string, request: TalkRequest, reply: DialogueReply, grounding: readonly RecallHit[], model: string): NewMemory[] {
  const thread = request.speaker;
  const heard = randomUUID();
  return [
    {
      id: heard,
      content: heardLine(request),
      tags: ['dialogue', 'heard', ...(onlyAsks(request.message) ? [QUESTION_TAG] : [])],
      importance: 0.4,
      source: { kind: 'dialogue', by: request.speaker, thread },
    },
    {
      // What the speaker heard: a `[TOOL: …]` is acted on, not said, and not said again from memory.
      content: `I told ${request.speaker}: ${withoutMarkers(reply.message)}`,
      tags: ['dialogue', SAID_TAG],
      importance: 0.2,
      source: { kind: 'dialogue', by: self, thread, model },
      ...(grounding.length > 0 ? { derived_from: grounding.map((h) => h.memory.id) } : {}),
    },
    // Learned facts are not turns (no thread): they stand on their own, stronger than the line they came from.
    ...reply.learned.map((fact): NewMemory => ({
      content: fact,
      tags: [LEARNED_TAG],
      importance: 0.6,
      source: { kind: 'dialogue', by: request.speaker, model },
      derived_from: [heard],
    })),
  ];
}

/** Whether a line only asks ("Who tends the mill?"): a question with nothing told in it. */
export function onlyAsks(line: string): boolean {
  return /\?\s*$/.test(line) && statements(line).length === 0;
}

function systemPrompt(ctx: AgentBehaviorContext, packet: ContextPacket): string {
  const disposition = Object.entries(ctx.disposition).map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return personaPrompt(
    ctx.definition.persona,
    goalsLine(ctx.definition),
    disposition.length > 0 ? `How you are now: ${disposition.join('; ')}.` : undefined,
    ...(contextBlocks(packet).length > 0 ? contextBlocks(packet) : ['You remember nothing about this.']),
    ANSWER_SHAPES.dialogue,
  );
}
