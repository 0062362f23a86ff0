import assert from 'node:assert/strict';
import { test } from 'node:test';

import { reply } from '../../../agent/llm/offline-provider.js';
import { PersonaSchema } from '../../../shared/domain/domain-schema.js';

const elder = PersonaSchema.parse({ name: 'Elder Rowan', traits: ['wise'], speechStyle: 'measured' });

test("offline replies recite what the agent was told or saw, never its own consolidation insights", () => {
  const told = { content: 'Hal the miller says the axle is cracked', strength: 0.9, kind: 'dialogue' };
  const insight = { content: 'Recurring theme: mill, axle (3 memories)', strength: 1, kind: 'insight' };
  const both = reply(elder, 'player', 'What about the mill?', [insight, told]);
  assert.match(both.message, /Hal the miller says the axle is cracked\./);
  assert.doesNotMatch(both.message, /Recurring theme/);
  const only = reply(elder, 'player', 'What about the mill?', [insight]);
  assert.match(only.message, /I know nothing of "What about the mill"/);
  assert.equal(only.emotional_tone, 'uncertain');
});
