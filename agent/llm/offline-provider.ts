import type { Persona } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { BriefMemory, GenerateRequest, GenerateResult, LlmProvider, PromptBrief, ScoredOption } from './llm-provider.js';
import type { DecisionAnswer, DialogueReply, ThoughtAnswer } from './llm-tasks.js';

/** Openers by trait; the first trait of the persona that has one sets the tone. */
const OPENERS: Readonly<Record<string, readonly [opener: string, tone: string]>> = {
  wise: ['Hmm. Let me think on that.', 'calm'],
  guarded: ['I will say this much.', 'wary'],
  gruff: ['Hmph.', 'curt'],
  honest: ['Straight answer, then.', 'frank'],
  kind: ['Oh, my friend!', 'warm'],
  curious: ['Now that is a question.', 'curious'],
  jovial: ['Ha! Pull up a stool.', 'cheerful'],
  gossipy: ['Between you and me…', 'conspiratorial'],
  disciplined: ['Report, then.', 'stern'],
  suspicious: ['Why do you ask?', 'suspicious'],
  dreamy: ['Ah, that reminds me…', 'wistful'],
  forgetful: ['Now, where was I…', 'vague'],
};

/** Closing lines by a word of the speech style; the first word that has one wins. */
const CLOSERS: ReadonlyArray<readonly [word: RegExp, closer: string]> = [
  [/archaic/, 'So it was told, and so I tell it.'],
  [/military/, 'That is all.'],
  [/rumou?r|chatty|gossip/, 'But you did not hear it from me!'],
  [/question/, 'What do you make of it?'],
  [/warm/, 'Take care now.'],
  [/formal/, 'I trust that answers you.'],
  [/rambling/, 'Or was it the other way round?'],
];

/** Styles that keep a reply to the one best fact. */
const BRIEF_STYLE = /short|blunt|clipped|terse|curt/;

/** First words of a sentence that asks or requests rather than tells. */
const ASKING =
  /^(tell|say|give|show|come|go|bring|help|let|please|will|would|could|can|should|shall|do|does|did|is|are|was|were|have|has|what|who|whom|whose|where|when|why|how|which)\b/i;

/**
 * The provider with no model and no network: deterministic answers composed from the
 * request's brief (persona, speech style, recalled memories, options). The default for every
 * use, and what tests run against. It spends no tokens.
 */
export class OfflineProvider implements LlmProvider {
  readonly kind = 'offline';
  readonly capabilities = { streaming: true, json: true, tools: false };

  info(): { provider: string; model: string } {
    return { provider: 'offline', model: 'offline' };
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    if (request.signal?.aborted)
      throw new ThymosError(ErrorCode.CANCELLED, 'the offline call was cancelled', { cause: request.signal.reason });
    if (!request.brief) {
      throw new ThymosError(
        ErrorCode.LLM_UNAVAILABLE,
        'the offline provider answers only requests with a brief (dialogue, think, decide, summarize); configure a model for free-form generation',
      );
    }
    const answer = compose(request.brief);
    const text = request.json ? JSON.stringify(answer) : textOf(answer);
    return { text, model: 'offline', finish_reason: 'stop', usage: { input_tokens: 0, output_tokens: 0 } };
  }

  /** The composed answer, a word (and the space after it) at a time, as a model would write it. */
  async stream(request: GenerateRequest, onText: (piece: string) => void): Promise<GenerateResult> {
    const result = await this.generate(request);
    for (const piece of result.text.match(/\s*\S+\s*|\s+/g) ?? []) onText(piece);
    return result;
  }
}

type Answer = DialogueReply | ThoughtAnswer | DecisionAnswer | { insight: string };

function compose(brief: PromptBrief): Answer {
  switch (brief.task) {
    case 'dialogue':
      return reply(brief.persona, brief.speaker, brief.message, brief.memories);
    case 'think':
      return think(brief.situation, brief.memories, brief.options);
    case 'decide':
      return decide(brief.options);
    case 'summarize':
      return { insight: brief.draft };
  }
}

function textOf(answer: Answer): string {
  if ('message' in answer) return answer.message;
  if ('steps' in answer) return answer.steps.join('\n');
  if ('action' in answer) return answer.action;
  return answer.insight;
}

/**
 * The persona's opener, the facts recall found (one for a brief speech style), and a closer in
 * its style. The agent's own insights (consolidation's summaries) are not recited as things it
 * recalls: they stay in a model's prompt, where they inform rather than get quoted.
 */
export function reply(persona: Persona, speaker: string, message: string, memories: readonly BriefMemory[]): DialogueReply {
  const [opener, tone] = persona.traits.map((t) => OPENERS[t.toLowerCase()]).find(Boolean) ?? ['Well.', 'neutral'];
  const style = persona.speechStyle.toLowerCase();
  const spoken = memories.filter((m) => m.kind !== 'insight');
  const facts = (BRIEF_STYLE.test(style) ? spoken.slice(0, 1) : spoken).map((m) => sentence(m.content));
  const closer = facts.length > 0 ? CLOSERS.find(([word]) => word.test(style))?.[1] : undefined;
  const body = facts.length > 0 ? `I recall this: ${facts.join(' ')}` : `I know nothing of ${quoteTopic(message)}.`;
  return {
    message: [opener, body, closer].filter(Boolean).join(' '),
    emotional_tone: facts.length > 0 ? tone : 'uncertain',
    actions: [],
    state_changes: {},
    learned: statements(message).map((s) => `${speaker} told me: ${s}`),
  };
}

/**
 * The sentences of a message that tell something: not questions, not requests, at least
 * three words, with a leading form of address ("Elder, …") left off.
 */
export function statements(message: string): string[] {
  const out: string[] = [];
  for (const raw of message.match(/[^.!?;]+[.!?;]*/g) ?? []) {
    if (/\?\s*$/.test(raw)) continue;
    let s = raw.trim().replace(/[;.!]+$/, '');
    const vocative = /^([A-Z][\w'-]*(?: [A-Z][\w'-]*)?), /.exec(s);
    if (vocative) s = s.slice(vocative[0].length);
    if (ASKING.test(s) || s.split(/\s+/).length < 3) continue;
    out.push(`${s[0]!.toLowerCase()}${s.slice(1)}.`);
  }
  return out;
}

/** Weighs each option by how much of it the situation and the memories speak of. */
function think(situation: string, memories: readonly BriefMemory[], options: readonly string[]): ThoughtAnswer {
  const context = words([situation, ...memories.map((m) => m.content)].join(' '));
  const scored = options.map((action, i): ScoredOption => {
    const own = words(action);
    const shared = [...own].filter((w) => context.has(w));
    // Earlier options win ties by a hair, so the order the agent lists them in is its preference.
    const score = round(0.2 + (0.7 * shared.length) / Math.max(own.size, 1) + (0.01 * (options.length - i)) / options.length);
    return {
      action,
      score: Math.min(score, 1),
      reason: shared.length > 0 ? `it speaks to ${shared.join(', ')}` : 'nothing I know points to it',
    };
  });
  const steps = [`What happened: ${situation}`];
  for (const m of memories.slice(0, 3)) steps.push(`What I remember: ${m.content} (strength ${m.strength})`);
  steps.push(`Options: ${options.join('; ')}`);
  return { steps, options: scored };
}

/** The best-scored option; confidence is its score, less half of the runner-up's. */
function decide(options: readonly ScoredOption[]): DecisionAnswer {
  const sorted = [...options].sort((a, b) => b.score - a.score);
  const [best, second] = sorted;
  if (!best) throw new ThymosError(ErrorCode.INVALID_INPUT, 'decide: expected at least one option');
  return { action: best.action, confidence: round(Math.max(0.05, best.score - (second?.score ?? 0) / 2)), reason: best.reason };
}

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[a-z][a-z'-]{3,}/g) ?? []);
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function sentence(text: string): string {
  const t = text.trim();
  return /[.!?…"']$/.test(t) ? t : `${t}.`;
}

function quoteTopic(message: string): string {
  const t = message.trim().replace(/[?!.]+$/, '');
  return t.length > 80 ? `"${t.slice(0, 80)}…"` : `"${t}"`;
}
