import assert from 'node:assert/strict';
import { test } from 'node:test';

import { readSavedState } from '../../../agent/runtime/saved-state.js';

test('a saved state is restored part by part: a part in another shape is left out, the rest kept', () => {
  const whole = { conversations: 3, llm: { calls: 2, input_tokens: 10, output_tokens: 5, cost: 0.01 }, disposition: { mood: 'warm' } };
  assert.deepEqual(readSavedState(whole), whole);
  assert.deepEqual(readSavedState({ ...whole, conversations: 'three' }), { llm: whole.llm, disposition: whole.disposition });
  assert.deepEqual(readSavedState({ ...whole, llm: { calls: 'many' } }), { conversations: 3, disposition: whole.disposition });
  assert.deepEqual(readSavedState({ ...whole, disposition: ['warm'] }), { conversations: 3, llm: whole.llm });
  assert.deepEqual(readSavedState({ conversations: -1 }), {});
});

test('a snapshot state that is not an object restores nothing', () => {
  for (const raw of [null, undefined, 'state', 42, []]) assert.deepEqual(readSavedState(raw), {}, JSON.stringify(raw));
});
