import { z } from 'zod';
import { generateStructured, type LlmMessage, type LlmProvider } from '../shared/llm-provider.js';
import type { AgentBehavior, AgentBehaviorContext, TalkReply, TalkRequest } from './agent-behavior.js';
import { groundingFor, heardLine, recordExchange } from './offline-behavior.js';
import { personaPrompt } from './persona-prompt.js';

/** What the model answers, validated; a reply that does not fit is repaired once. */
export const DialogueReplySchema = z.object({
  message: z.string().min(1),
  emotional_tone: z.string().default('neutral'),
  actions: z.array(z.string()).default([]),
  state_changes: z.record(z.string(), z.unknown()).default({}),
});
export type DialogueReply = z.infer<typeof DialogueReplySchema>;

const GROUNDING = 5;
const RECENT_TURNS = 6;

/**
 * Talk through a language model (`[llm.dialogue]`): the prompt holds the persona (traits,
 * speech style, background), what recall finds for the message with each memory's strength,
 * and the recent turns of this conversation; the model answers
 * `{message, emotional_tone, actions, state_changes}` as JSON. The exchange is remembered like
 * any other. The call is cancelled when the agent is passivated or stops.
 */
export class LlmBehavior implements AgentBehavior {
  readonly #provider: LlmProvider;

  constructor(provider: LlmProvider) {
    this.#provider = provider;
  }

  async talk(ctx: AgentBehaviorContext, request: TalkRequest): Promise<TalkReply> {
    const grounding = await groundingFor(ctx, request, GROUNDING);
    const recent = ctx.recentTurns(request.speaker, RECENT_TURNS).filter((m) => m.content !== heardLine(request));
    const messages: LlmMessage[] = [{ role: 'system', content: systemPrompt(ctx, grounding.map((h) => `- ${h.memory.content} (strength ${h.score.strength})`)) }];
    for (const m of recent) messages.push({ role: m.source.by === ctx.id ? 'assistant' : 'user', content: m.content });
    messages.push({ role: 'user', content: `${request.speaker}: ${request.message}` });
    const { value, result } = await generateStructured(this.#provider, { messages, signal: ctx.signal }, DialogueReplySchema);
    ctx.spent(result.usage);
    await recordExchange(ctx, request, value.message);
    return { reply: value.message, grounding, tone: value.emotional_tone, actions: value.actions, state_changes: value.state_changes };
  }
}

function systemPrompt(ctx: AgentBehaviorContext, memories: string[]): string {
  return personaPrompt(
    ctx.definition.persona,
    memories.length > 0 ? `What you remember (strength 0..1, weaker is hazier):\n${memories.join('\n')}` : 'You remember nothing about this.',
    'Answer with one JSON object: {"message": what you say, "emotional_tone": one word, "actions": [things you do], "state_changes": {}}.',
  );
}
