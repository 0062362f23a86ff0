import type { LlmContextSettings } from '../../shared/config/index.js';
import { QUESTION_TAG, SAID_TAG } from '../consolidation/claims.js';
import type { MemoryRecord, RecallHit } from '../memory/memory-record.js';
import type { AgentBehaviorContext } from './agent-behavior.js';

/** The tiers of a context packet, in the order they are filled. */
export const CONTEXT_TIERS = ['facts', 'summaries', 'turns', 'questions'] as const;
export type ContextTier = (typeof CONTEXT_TIERS)[number];

/** How the budget counts tokens: characters / 4, rounded up (as token use is estimated where a provider reports none). */
export const TOKEN_COUNT = 'ceil(characters / 4)';
export function countTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Recalled memories considered for a packet, before the budget. */
const CANDIDATES = 24;
/** The newest turns of the conversation considered for a dialogue's packet. */
const THREAD_TURNS = 8;

export interface ContextItem {
  id: string;
  tier: ContextTier;
  content: string;
  /** The recall's final score (relevance × strength); 1 for the conversation's own turns. */
  relevance: number;
  strength: number;
  tokens: number;
  /** A turn of the conversation this packet is for (put to the model as a message, in order). */
  thread?: string;
  by: string;
  occurred_at: number;
}

export interface ContextPacket {
  use: 'dialogue' | 'reasoning';
  query: string;
  budget_tokens: number;
  used_tokens: number;
  token_count: typeof TOKEN_COUNT;
  min_relevance: number;
  /** What goes in front of the model, tier by tier; in each, most relevant first (the conversation's turns oldest first). */
  items: ContextItem[];
  /** What was considered and left out: over the budget, under the least relevance, or told already by a fact in the packet. */
  left_out: Array<Pick<ContextItem, 'id' | 'tier' | 'relevance' | 'tokens'> & { why: 'budget' | 'relevance' | 'covered' }>;
}

/**
 * The tier of a memory: `facts` (what it knows: facts it learned or was told, events, world
 * changes, decisions, and insights that say two memories disagree), `summaries` (themes and
 * digests consolidation wrote), `turns` (raw lines of a conversation), `questions` (lines
 * that only asked and have no answer in them).
 */
export function tierOf(m: MemoryRecord): ContextTier {
  if (m.tags.includes(QUESTION_TAG)) return 'questions';
  if (m.source.kind === 'insight') return m.tags.includes('contradiction') ? 'facts' : 'summaries';
  if (m.source.thread !== undefined) return 'turns';
  return 'facts';
}

/**
 * What is put in front of a model for `query`: recall finds candidates (not the agent's own
 * replies, not reinforced), the conversation with `thread` adds its newest turns, and the
 * budget is filled tier by tier (facts, summaries, turns, questions), each tier most relevant
 * first. A recalled memory under the least relevance stays out; so does a raw turn whose fact
 * is in the packet already (a learned fact points to the turn it was told in). Never throws on
 * what the query says: an empty or odd query finds less.
 */
export async function buildContext(
  ctx: Pick<AgentBehaviorContext, 'recall' | 'recentTurns'>,
  use: ContextPacket['use'],
  query: string,
  budget: LlmContextSettings,
  thread?: string,
): Promise<ContextPacket> {
  const words = query.trim();
  const hits: RecallHit[] = words
    ? await ctx.recall(words, { k: CANDIDATES, reinforce: false, filter: (m) => !m.tags.includes(SAID_TAG) })
    : [];
  const candidates = new Map<string, ContextItem>();
  for (const h of hits) candidates.set(h.memory.id, item(h.memory, tierOf(h.memory), h.score.final, h.score.strength));
  // The conversation's own turns are wanted as they are: what was just said, not what recall ranks.
  if (thread !== undefined)
    for (const m of ctx.recentTurns(thread, THREAD_TURNS)) candidates.set(m.id, { ...item(m, 'turns', 1, 1), thread });
  const packet: ContextPacket = {
    use,
    query: words,
    budget_tokens: budget.context_tokens,
    used_tokens: 0,
    token_count: TOKEN_COUNT,
    min_relevance: budget.context_min_relevance,
    items: [],
    left_out: [],
  };
  const told = new Set<string>();
  for (const tier of CONTEXT_TIERS) {
    const inTier = [...candidates.values()]
      .filter((c) => c.tier === tier)
      .sort((a, b) => b.relevance - a.relevance || b.occurred_at - a.occurred_at);
    for (const c of inTier) {
      const out = (why: 'budget' | 'relevance' | 'covered') =>
        packet.left_out.push({ id: c.id, tier: c.tier, relevance: c.relevance, tokens: c.tokens, why });
      if (c.thread === undefined && c.relevance < budget.context_min_relevance) out('relevance');
      else if (tier === 'turns' && c.thread === undefined && told.has(c.id)) out('covered');
      else if (packet.used_tokens + c.tokens > budget.context_tokens) out('budget');
      else {
        packet.items.push(c);
        packet.used_tokens += c.tokens;
        for (const source of memoryOf(hits, c.id)?.derived_from ?? []) told.add(source);
      }
    }
  }
  // The conversation reads in order.
  const turns = packet.items.filter((i) => i.thread !== undefined).sort((a, b) => a.occurred_at - b.occurred_at);
  packet.items = [...packet.items.filter((i) => i.thread === undefined), ...turns];
  return packet;
}

function item(m: MemoryRecord, tier: ContextTier, relevance: number, strength: number): ContextItem {
  return {
    id: m.id,
    tier,
    content: m.content,
    relevance,
    strength,
    tokens: countTokens(m.content),
    by: m.source.by,
    occurred_at: m.occurred_at ?? m.created_at,
  };
}

function memoryOf(hits: readonly RecallHit[], id: string): MemoryRecord | undefined {
  return hits.find((h) => h.memory.id === id)?.memory;
}

const HEADINGS: Record<ContextTier, string> = {
  facts: 'What you know (strength 0..1, weaker is hazier):',
  summaries: 'What you recall in summary:',
  turns: 'Things said before:',
  questions: 'Questions still open:',
};

/** The packet's recalled items as prompt blocks, by tier (the conversation's own turns go to the model as messages instead). */
export function contextBlocks(packet: ContextPacket): string[] {
  const blocks: string[] = [];
  for (const tier of CONTEXT_TIERS) {
    const lines = packet.items
      .filter((i) => i.tier === tier && i.thread === undefined)
      .map((i) => `- ${i.content} (strength ${i.strength})`);
    if (lines.length > 0) blocks.push(`${HEADINGS[tier]}\n${lines.join('\n')}`);
  }
  return blocks;
}
