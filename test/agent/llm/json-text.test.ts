import assert from 'node:assert/strict';
import { test } from 'node:test';

import { jsonIn, StringControls } from '../../../agent/llm/json-text.js';

test('jsonIn reads the first object in prose or a fence, and one with line breaks left in its strings', () => {
  assert.deepEqual(jsonIn('Sure:\n```json\n{"a": 1}\n```'), { a: 1 });
  assert.deepEqual(jsonIn('{"message": "one\ntwo\tthree", "n": [1,\n 2]}'), { message: 'one\ntwo\tthree', n: [1, 2] });
  assert.throws(() => jsonIn('no object here'), /no JSON object/);
  assert.throws(() => jsonIn('{"a": }'), SyntaxError);
});

test('StringControls escapes control characters inside strings only, whatever the cuts, and leaves escapes as written', () => {
  const text = '{\n  "m": "a\nb\\"c\\n\u0001",\n  "k": [1,\n2]\n}';
  for (let cut = 0; cut <= text.length; cut++) {
    const c = new StringControls();
    const out = c.feed(text.slice(0, cut)) + c.feed(text.slice(cut));
    assert.deepEqual(JSON.parse(out), { m: 'a\nb"c\n\u0001', k: [1, 2] }, `cut at ${cut}`);
  }
});
