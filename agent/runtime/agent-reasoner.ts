import { z } from 'zod';

import { SAID_TAG } from '../consolidation/claims.js';
import { generateStructured, type LlmMessage, type ScoredOption } from '../llm/llm-provider.js';
import { ANSWER_SHAPES } from '../llm/llm-tasks.js';
import { goalsLine, personaPrompt } from '../llm/persona-prompt.js';
import type { AgentBehaviorContext } from './agent-behavior.js';
import { buildContext, contextBlocks } from './context-packet.js';

/** What an agent weighs when neither the call nor its definition (`actions`) names options. */
export const DEFAULT_OPTIONS = ['look into it', 'tell someone', 'carry on as before'] as const;
const GROUNDING = 5;
/** The tag of the memory an agent keeps of each decision about a heard event. */
export const DECISION_TAG = 'decision';

export interface Thought {
  situation: string;
  steps: string[];
  /** Every option, best first. */
  options: ScoredOption[];
  /** Who reasoned: `offline`, or provider and model. */
  model: string;
}

export interface Decision {
  action: string;
  confidence: number;
  reason: string;
  thought: Thought;
}

/**
 * `think(situation)`: the steps of the reasoning and every option scored, from the persona,
 * its goals and the context packet for the situation (`[llm.reasoning] context_tokens`). Runs on `[llm.reasoning]` (offline:
 * options scored by how much of them the situation and the memories speak of). A model's
 * answer must score the given options, no others; one that does not is repaired once.
 */
export async function think(ctx: AgentBehaviorContext, situation: string, options?: readonly string[]): Promise<Thought> {
  const choices = optionsFor(ctx, options);
  const provider = ctx.model('reasoning');
  // What it said and what it decided before are not evidence about the situation: an earlier
  // decision holds its action's words and would vote for itself whatever happened.
  const hits = await ctx.recall(situation, { k: GROUNDING, filter: (m) => !m.tags.includes(SAID_TAG) && !m.tags.includes(DECISION_TAG) });
  const memories = hits.map((h) => ({ content: h.memory.content, strength: h.score.strength }));
  const packet = await buildContext(ctx, 'reasoning', situation, ctx.contextBudget('reasoning'));
  const messages: LlmMessage[] = [
    { role: 'system', content: prompt(ctx, contextBlocks(packet), `Your options: ${choices.map((o) => JSON.stringify(o)).join(', ')}.`, ANSWER_SHAPES.think) },
    { role: 'user', content: `What happened: ${situation}\nThink it through, then score every option.` },
  ];
  const action = z.enum(choices as [string, ...string[]]);
  const schema = z.object({
    steps: z.array(z.string()).min(1),
    options: z.array(z.object({ action, score: z.number().min(0).max(1), reason: z.string().default('') })).min(1),
  });
  const brief = { task: 'think' as const, persona: ctx.definition.persona, situation, memories, options: choices };
  const { value, result } = await generateStructured(provider, { messages, signal: ctx.signal, brief }, schema, { spent: (r) => ctx.spent('reasoning', provider, r) });
  const scored = new Map(value.options.map((o) => [o.action, o]));
  const all = choices.map((c) => scored.get(c) ?? { action: c, score: 0, reason: 'not weighed' });
  all.sort((a, b) => b.score - a.score);
  return { situation, steps: value.steps, options: all, model: provider.kind === 'offline' ? 'offline' : `${provider.kind}:${result.model}` };
}

/** `decide`: one of the options of a thought, with a confidence from 0 to 1. */
export async function decide(ctx: AgentBehaviorContext, thought: Thought): Promise<Decision> {
  const provider = ctx.model('reasoning');
  const listed = thought.options.map((o) => `- ${JSON.stringify(o.action)}: ${o.score} (${o.reason})`).join('\n');
  const messages: LlmMessage[] = [
    { role: 'system', content: prompt(ctx, [], ANSWER_SHAPES.decide) },
    { role: 'user', content: `What happened: ${thought.situation}\nYour reasoning:\n${thought.steps.join('\n')}\nThe options as you scored them:\n${listed}\nChoose one.` },
  ];
  const schema = z.object({ action: z.enum(thought.options.map((o) => o.action) as [string, ...string[]]), confidence: z.number().min(0).max(1), reason: z.string().default('') });
  const brief = { task: 'decide' as const, persona: ctx.definition.persona, situation: thought.situation, options: thought.options };
  const { value } = await generateStructured(provider, { messages, signal: ctx.signal, brief }, schema, { spent: (r) => ctx.spent('reasoning', provider, r) });
  return { ...value, thought };
}

function optionsFor(ctx: AgentBehaviorContext, given: readonly string[] | undefined): string[] {
  const source = given && given.length > 0 ? given : ctx.definition.actions.length > 0 ? ctx.definition.actions : DEFAULT_OPTIONS;
  return [...new Set(source.map((o) => o.trim()).filter(Boolean))];
}

function prompt(ctx: AgentBehaviorContext, context: readonly string[], ...more: string[]): string {
  return personaPrompt(ctx.definition.persona, goalsLine(ctx.definition), ...context, ...more);
}
