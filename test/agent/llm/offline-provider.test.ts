import assert from 'node:assert/strict';
import { test } from 'node:test';

import { OfflineProvider, reply } from '../../../agent/llm/offline-provider.js';
import { PersonaSchema } from '../../../shared/domain/domain-schema.js';

const elder = PersonaSchema.parse({ name: 'Elder Rowan', traits: ['wise'], speechStyle: 'measured' });

test('offline replies recite what the agent was told or saw, never its own consolidation insights', () => {
  const told = { content: 'Hal the miller says the axle is cracked', strength: 0.9, kind: 'dialogue' };
  const insight = { content: 'Recurring theme: mill, axle (3 memories)', strength: 1, kind: 'insight' };
  const both = reply(elder, 'player', 'What about the mill?', [insight, told]);
  assert.match(both.message, /Hal the miller says the axle is cracked\./);
  assert.doesNotMatch(both.message, /Recurring theme/);
  const only = reply(elder, 'player', 'What about the mill?', [insight]);
  assert.match(only.message, /I know nothing of "What about the mill"/);
  assert.equal(only.emotional_tone, 'uncertain');
});

test('the offline provider streams its answer a word at a time, and the pieces add up to it', async () => {
  const pieces: string[] = [];
  const brief = {
    task: 'dialogue' as const,
    persona: elder,
    speaker: 'player',
    message: 'What of the mill?',
    memories: [{ content: 'The mill wheel turns at dawn', strength: 0.8 }],
  };
  const result = await new OfflineProvider().stream({ messages: [], brief, json: true }, (p) => pieces.push(p));
  assert.ok(pieces.length > 5, JSON.stringify(pieces));
  assert.equal(pieces.join(''), result.text);
  assert.match(JSON.parse(result.text).message as string, /The mill wheel turns at dawn/);
});
