import type { AgentBehavior, AgentBehaviorContext, TalkReply, TalkRequest } from './agent-behavior.js';
import type { Persona } from '../shared/domain-schema.js';
import type { RecallHit } from './memory-record.js';

/** Openers by trait; the first trait of the persona that has one sets the tone. */
const OPENERS: Readonly<Record<string, string>> = {
  wise: 'Hmm. Let me think on that.',
  guarded: 'I will say this much.',
  gruff: 'Hmph.',
  honest: 'Straight answer, then.',
  kind: 'Oh, my friend!',
  curious: 'Now that is a question.',
  jovial: 'Ha! Pull up a stool.',
  gossipy: 'Between you and me…',
  disciplined: 'Report, then.',
  suspicious: 'Why do you ask?',
  dreamy: 'Ah, that reminds me…',
  forgetful: 'Now, where was I…',
};

/** Memories an agent writes of its own words; left out of grounding so it does not quote itself. */
const SAID_TAG = 'said';

/** What was said to the agent, as it is remembered. */
export function heardLine(request: TalkRequest): string {
  return `${request.speaker} said to me: ${request.message}`;
}

/**
 * Memories that may ground a reply: neither the agent's own replies nor earlier records of
 * this very line (asked the same question twice, it answers from what it knows, not the asker).
 */
export async function groundingFor(ctx: AgentBehaviorContext, request: TalkRequest, k: number): Promise<RecallHit[]> {
  const echo = heardLine(request);
  return ctx.recall(request.message, { k, filter: (m) => !m.tags.includes(SAID_TAG) && m.content !== echo });
}

/** Stores both lines of an exchange as memories of the conversation thread named after the speaker. */
export async function recordExchange(ctx: AgentBehaviorContext, request: TalkRequest, reply: string): Promise<void> {
  const thread = request.speaker;
  await ctx.remember({ content: heardLine(request), tags: ['dialogue', 'heard'], importance: 0.4, source: { kind: 'dialogue', by: request.speaker, thread } });
  await ctx.remember({ content: `I told ${request.speaker}: ${reply}`, tags: ['dialogue', SAID_TAG], importance: 0.2, source: { kind: 'dialogue', by: ctx.id, thread } });
}

/**
 * The default behaviour: no model, no network. It answers in the persona's voice with
 * what recall finds for the message, and records the exchange as memories of the
 * conversation thread named after the speaker.
 */
export class OfflineBehavior implements AgentBehavior {
  async talk(ctx: AgentBehaviorContext, request: TalkRequest): Promise<TalkReply> {
    const grounding = await groundingFor(ctx, request, 3);
    const persona = ctx.definition.persona;
    const facts = grounding.map((h) => sentence(h.memory.content));
    const body =
      facts.length > 0
        ? `I recall this: ${facts.join(' ')}`
        : `I know nothing of ${quoteTopic(request.message)}.`;
    const reply = `${opener(persona)} ${body}`;
    await recordExchange(ctx, request, reply);
    return { reply, grounding };
  }
}

function opener(persona: Persona): string {
  for (const trait of persona.traits) {
    const line = OPENERS[trait.toLowerCase()];
    if (line) return line;
  }
  return 'Well.';
}

function sentence(text: string): string {
  const t = text.trim();
  return /[.!?…"']$/.test(t) ? t : `${t}.`;
}

function quoteTopic(message: string): string {
  const t = message.trim().replace(/[?!.]+$/, '');
  return t.length > 80 ? `"${t.slice(0, 80)}…"` : `"${t}"`;
}
