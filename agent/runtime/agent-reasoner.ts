import { z } from 'zod';

import type { EventDecision } from '../../shared/protocol/index.js';
import { SAID_TAG } from '../consolidation/claims.js';
import { type LlmMessage, type ScoredOption, type ToolStep } from '../llm/llm-provider.js';
import { ANSWER_SHAPES } from '../llm/llm-tasks.js';
import { goalsLine, personaPrompt } from '../llm/persona-prompt.js';
import { generateStructured } from '../llm/structured-output.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { MemoryRecord } from '../memory/memory-record.js';
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
  /** The calls of the agent's tools its model made while it decided, in order. */
  tool_calls?: ToolStep[];
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
    {
      role: 'system',
      content: prompt(
        ctx,
        contextBlocks(packet),
        `Your options: ${choices.map((o) => JSON.stringify(o)).join(', ')}.`,
        ANSWER_SHAPES.think,
      ),
    },
    { role: 'user', content: `What happened: ${situation}\nThink it through, then score every option.` },
  ];
  const action = z.enum(choices as [string, ...string[]]);
  const schema = z.object({
    steps: z.array(z.string()).min(1),
    options: z.array(z.object({ action, score: z.number().min(0).max(1), reason: z.string().default('') })).min(1),
  });
  const brief = { task: 'think' as const, persona: ctx.definition.persona, situation, memories, options: choices };
  const { value, result } = await generateStructured(provider, { messages, signal: ctx.signal, brief }, schema, {
    spent: (r) => ctx.spent('reasoning', provider, r),
  });
  const scored = new Map(value.options.map((o) => [o.action, o]));
  const all = choices.map((c) => scored.get(c) ?? { action: c, score: 0, reason: 'not weighed' });
  all.sort((a, b) => b.score - a.score);
  return {
    situation,
    steps: value.steps,
    options: all,
    model: provider.kind === 'offline' ? 'offline' : `${provider.kind}:${result.model}`,
  };
}

/**
 * `decide`: one of the options of a thought, with a confidence from 0 to 1. The model may act
 * on it with the agent's granted tools (`[llm.reasoning] max_tool_steps`) before it answers.
 */
export async function decide(ctx: AgentBehaviorContext, thought: Thought): Promise<Decision> {
  const provider = ctx.model('reasoning');
  const tools = ctx.tools('reasoning');
  const listed = thought.options.map((o) => `- ${JSON.stringify(o.action)}: ${o.score} (${o.reason})`).join('\n');
  const messages: LlmMessage[] = [
    { role: 'system', content: prompt(ctx, [], ANSWER_SHAPES.decide) },
    {
      role: 'user',
      content: `What happened: ${thought.situation}\nYour reasoning:\n${thought.steps.join('\n')}\nThe options as you scored them:\n${listed}\nChoose one${tools ? '; when one of your tools does what you choose, call it before you answer' : ''}.`,
    },
  ];
  const schema = z.object({
    action: z.enum(thought.options.map((o) => o.action) as [string, ...string[]]),
    confidence: z.number().min(0).max(1),
    reason: z.string().default(''),
  });
  const brief = { task: 'decide' as const, persona: ctx.definition.persona, situation: thought.situation, options: thought.options };
  const { value, result } = await generateStructured(provider, { messages, signal: ctx.signal, brief }, schema, {
    spent: (r) => ctx.spent('reasoning', provider, r),
    tools,
  });
  return { ...value, thought, ...(result.tool_steps?.length ? { tool_calls: result.tool_steps } : {}) };
}

/** The memory an agent keeps of its decision about a heard event. */
export function decisionMemory(self: string, heard: MemoryRecord, decision: Decision): NewMemory {
  return {
    content: `I heard: ${heard.content}. I decided to ${decision.action} (confidence ${decision.confidence})${decision.reason ? `: ${decision.reason}` : ''}`,
    tags: [DECISION_TAG],
    importance: 0.5,
    source: { kind: 'reasoning', by: self, event: heard.source.event!, model: decision.thought.model },
    derived_from: [heard.id],
  };
}

/** A decision about a heard event as the fleet hears of it, with the calls its model made. */
export function decisionNews(self: string, heard: MemoryRecord, decision: Decision, memory: string): EventDecision {
  const { action, confidence, reason, thought, tool_calls } = decision;
  return {
    agent: self,
    event: heard.source.event!,
    heard: heard.content,
    action,
    confidence,
    reason,
    steps: thought.steps,
    options: thought.options,
    model: thought.model,
    memory,
    ...(tool_calls?.length ? { tool_calls } : {}),
  };
}

function optionsFor(ctx: AgentBehaviorContext, given: readonly string[] | undefined): string[] {
  const source = given && given.length > 0 ? given : ctx.definition.actions.length > 0 ? ctx.definition.actions : DEFAULT_OPTIONS;
  return [...new Set(source.map((o) => o.trim()).filter(Boolean))];
}

function prompt(ctx: AgentBehaviorContext, context: readonly string[], ...more: string[]): string {
  return personaPrompt(ctx.definition.persona, goalsLine(ctx.definition), ...context, ...more);
}
