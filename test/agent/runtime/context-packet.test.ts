import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { AgentMemory } from '../../../agent/memory/agent-memory.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { buildContext, CONTEXT_TIERS, countTokens } from '../../../agent/runtime/context-packet.js';
import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { tempDir } from '../../helpers/temp-dir.js';

const settings = ThymosConfigSchema.parse({}).memory;

describe('the context packet', () => {
  let store: MemoryStore;
  let memory: AgentMemory;
  const ctx = {
    recall: (q: string, o: Parameters<AgentMemory['recall']>[1]) => memory.recall(q, o),
    recentTurns: (thread: string, limit: number) => memory.threadTurns(thread, limit),
  };

  before(async () => {
    store = await MemoryStore.open(join(tempDir('thymos-context-'), 'db'), { timeoutMs: 10_000 });
    memory = await AgentMemory.load(store, settings);
    const t = Date.UTC(2026, 4, 1);
    await memory.rememberMany(
      [
        {
          id: 'heard-mill',
          content: 'player said to me: the mill wheel broke in the flood',
          tags: ['dialogue', 'heard'],
          source: { kind: 'dialogue', by: 'player', thread: 'player' },
        },
        {
          id: 'said-mill',
          content: 'I told player: the mill wheel can be mended',
          tags: ['dialogue', 'said'],
          source: { kind: 'dialogue', by: 'me', thread: 'player' },
        },
        {
          id: 'fact-mill',
          content: 'The mill wheel broke in the flood',
          tags: ['learned'],
          importance: 0.6,
          source: { kind: 'dialogue', by: 'player' },
          derived_from: ['heard-mill'],
        },
        {
          id: 'theme-mill',
          content: 'Theme: the mill and the flood come up again and again',
          tags: ['insight', 'theme'],
          source: { kind: 'insight', by: 'consolidation:theme' },
        },
        {
          id: 'event-mill',
          content: 'Water rose over the mill race (weather.flood at mill)',
          tags: ['event'],
          source: { kind: 'event', by: 'game', event: 'e1' },
        },
        {
          id: 'old-turn',
          content: 'bram said to me: the mill flood took the lower field',
          tags: ['dialogue', 'heard'],
          source: { kind: 'dialogue', by: 'bram', thread: 'bram' },
        },
        {
          id: 'question-mill',
          content: 'bram said to me: who will mend the mill wheel?',
          tags: ['dialogue', 'heard', 'question'],
          source: { kind: 'dialogue', by: 'bram', thread: 'bram' },
        },
      ],
      t,
    );
  });

  after(async () => {
    await store.close();
  });

  test('tiers fill in order (facts, summaries, turns, questions); a turn whose fact is in is left out as covered; the conversation reads in order', async () => {
    const packet = await buildContext(ctx, 'dialogue', 'mill wheel flood', { context_tokens: 5000, context_min_relevance: 0 }, 'player');
    const tiers = packet.items.map((i) => i.tier);
    const order = tiers.map((t) => CONTEXT_TIERS.indexOf(t));
    const recalled = packet.items.filter((i) => i.thread === undefined).map((i) => CONTEXT_TIERS.indexOf(i.tier));
    assert.deepEqual(
      recalled,
      [...recalled].sort((a, b) => a - b),
      `recalled items by tier: ${tiers.join(', ')}`,
    );
    assert.ok(order.length >= 5);
    const byId = new Map(packet.items.map((i) => [i.id, i]));
    assert.equal(byId.get('fact-mill')?.tier, 'facts');
    assert.equal(byId.get('event-mill')?.tier, 'facts');
    assert.equal(byId.get('theme-mill')?.tier, 'summaries');
    assert.equal(byId.get('old-turn')?.tier, 'turns');
    assert.equal(byId.get('question-mill')?.tier, 'questions');
    // The conversation with the player is in as its own turns, oldest first, at the end.
    assert.deepEqual(
      packet.items.filter((i) => i.thread === 'player').map((i) => i.id),
      ['heard-mill', 'said-mill'],
    );
    assert.equal(
      packet.used_tokens,
      packet.items.reduce((n, i) => n + i.tokens, 0),
    );
    assert.equal(packet.token_count, 'ceil(characters / 4)');
    // Without the conversation, the heard line the fact came from is told by the fact already.
    const alone = await buildContext(ctx, 'reasoning', 'player said the mill wheel broke in the flood', {
      context_tokens: 5000,
      context_min_relevance: 0,
    });
    assert.ok(alone.items.some((i) => i.id === 'fact-mill'));
    assert.deepEqual(
      alone.left_out.filter((l) => l.id === 'heard-mill').map((l) => l.why),
      ['covered'],
    );
    assert.ok(!alone.items.some((i) => i.id === 'said-mill'), "the agent's own replies are not recalled into a packet");
  });

  test('the budget holds: what does not fit is left out as budget, and the higher tiers go first', async () => {
    const full = await buildContext(ctx, 'reasoning', 'mill wheel flood', { context_tokens: 5000, context_min_relevance: 0 });
    const fact = full.items.find((i) => i.id === 'fact-mill')!;
    const budget = fact.tokens + 3;
    const tight = await buildContext(ctx, 'reasoning', 'mill wheel flood', { context_tokens: budget, context_min_relevance: 0 });
    assert.ok(tight.used_tokens <= budget);
    assert.ok(
      tight.items.every((i) => i.tier === 'facts'),
      `only facts fit: ${tight.items.map((i) => i.tier).join(', ')}`,
    );
    assert.ok(tight.left_out.some((l) => l.why === 'budget' && l.tier === 'turns'));
    assert.equal(countTokens('abcd'), 1);
    assert.equal(countTokens('abcde'), 2);
  });

  test('a recalled memory under the least relevance stays out; the conversation does not', async () => {
    const packet = await buildContext(ctx, 'dialogue', 'mill wheel flood', { context_tokens: 5000, context_min_relevance: 1 }, 'player');
    assert.deepEqual(
      packet.items.map((i) => i.id),
      ['heard-mill', 'said-mill'],
    );
    assert.ok(packet.left_out.length > 0 && packet.left_out.every((l) => l.why === 'relevance'));
  });

  test('an empty, odd or hostile query never throws: it finds less', async () => {
    for (const q of ['', '   ', '?!*', 'x'.repeat(4000), "'; DELETE memory; --", '\u0000\u{1F600}']) {
      const packet = await buildContext(ctx, 'dialogue', q, { context_tokens: 300, context_min_relevance: 0.05 }, 'nobody');
      assert.ok(packet.used_tokens <= 300);
      assert.ok(Array.isArray(packet.items));
    }
    assert.equal(memory.count, 7, 'nothing written');
  });
});
