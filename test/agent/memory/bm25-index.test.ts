import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { Bm25Index, narrowQuery } from '../../../agent/memory/bm25-index.js';

describe('BM25 over a large memory: words most memories hold', () => {
  // Counts by stemmed term, as the index keeps them ("wolves" stems to "wolv").
  const counts: Record<string, number> = { wolv: 60_000, mill: 400, flood: 30, sheep: 5 };
  const occurrences = (term: string) => counts[term] ?? 0;

  test('a word in over a quarter of the memories leaves a query whose rarer words can fill the results', () => {
    assert.equal(narrowQuery('wolves near the mill', 10, 100_000, occurrences), 'near mill', 'stop words go too: they match nothing');
    assert.equal(narrowQuery('wolves, the mill and the flood', 10, 100_000, occurrences), 'mill flood');
  });

  test('every word stays: in a memory of 10,000 or fewer, when all are common, or when the rarer ones cannot fill the results', () => {
    assert.equal(narrowQuery('wolves near the mill', 10, 10_000, occurrences), 'wolves near the mill');
    assert.equal(narrowQuery('wolves wolves', 10, 100_000, occurrences), 'wolves wolves');
    assert.equal(
      narrowQuery('wolves and sheep', 10, 100_000, occurrences),
      'wolves and sheep',
      'sheep occurs 5 times: too few for 10 results',
    );
    assert.equal(narrowQuery('wolves xyzzy', 10, 100_000, occurrences), 'wolves xyzzy', 'a word found nowhere does not replace the query');
    assert.equal(narrowQuery('', 10, 100_000, occurrences), '');
  });

  test('an index of 12,000 memories answers a query with a common word from its rarer words, best first', () => {
    const index = new Bm25Index();
    for (let i = 0; i < 12_000; i++) {
      index.add({
        id: `m${i}`,
        content: `${i % 2 === 0 ? 'wolves howled' : 'rain fell'} on day ${i}${i % 400 === 0 ? ' and the mill burned' : ''}`,
        tags: [],
      });
    }
    const hits = index.search('wolves mill', 10);
    assert.equal(hits.length, 10);
    assert.ok(
      hits.every((h) => Number(h.id.slice(1)) % 400 === 0),
      `every hit is a memory of the mill: ${hits.map((h) => h.id).join(' ')}`,
    );
    assert.equal(index.search('wolves', 5).length, 5, 'a query of common words alone is answered whole');
  });
});
