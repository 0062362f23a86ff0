import assert from 'node:assert/strict';
import { test } from 'node:test';

import { TextCache } from '../../../supervisor/embedding/text-cache.js';

test('the cache keeps at most its entries, and the least recently used text goes first', () => {
  const cache = new TextCache<string>(3);
  for (const text of ['a', 'b', 'c']) cache.set(TextCache.key(text), text);
  assert.equal(cache.get(TextCache.key('a')), 'a', 'reading a makes it the most recent');
  cache.set(TextCache.key('d'), 'd');
  assert.equal(cache.get(TextCache.key('b')), undefined, 'b, least recently used, went first');
  assert.deepEqual(
    ['a', 'c', 'd'].map((t) => cache.get(TextCache.key(t))),
    ['a', 'c', 'd'],
  );
  cache.set(TextCache.key('c'), 'c again');
  cache.set(TextCache.key('e'), 'e');
  assert.equal(cache.get(TextCache.key('a')), undefined, 'setting c again made it recent, so a went');
  assert.equal(cache.get(TextCache.key('c')), 'c again');
});

test('a cache of no entries keeps nothing', () => {
  const cache = new TextCache<string>(0);
  cache.set(TextCache.key('a'), 'a');
  assert.equal(cache.get(TextCache.key('a')), undefined);
});
