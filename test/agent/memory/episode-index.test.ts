import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EpisodeIndex } from '../../../agent/memory/episode-index.js';

const DAY = Date.UTC(2026, 10, 25, 9);

/**
 * An index of thread `a`'s three turns (each holding `wolves`) and 64 other threads' one turn
 * each, in the order `order` gives ('a' for a turn of a, a number for that other thread), and
 * the score of a's episode for `wolves`.
 */
function scoreOfA(order: Array<'a' | number>): number {
  const index = new EpisodeIndex();
  let n = 0;
  for (const who of order) {
    const thread = who === 'a' ? 'a' : `t${who}`;
    index.add(
      { id: `${thread}-${n++}`, source: { kind: 'dialogue', by: thread, thread }, created_at: DAY + n },
      who === 'a' ? ['wolves'] : ['sheep'],
    );
  }
  assert.equal(index.size, 65);
  return index
    .scores(['a@' + Math.floor(DAY / 86_400_000)], (id) => (id.startsWith('a-') ? ['wolves'] : []))
    .values()
    .next().value!;
}

const others = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

test('a term is counted once per episode while its thread is one of the 64 latest, however its turns are spread', () => {
  const together = scoreOfA(['a', 'a', 'a', ...others(0, 64)]);
  assert.equal(scoreOfA(['a', ...others(0, 63), 'a', 'a', 63]), together, '63 threads between two turns: still open');
  assert.equal(scoreOfA(['a', ...others(0, 40), 'a', ...others(40, 64), 'a']), together, 'a turn in between makes the thread recent again');
  assert.ok(
    scoreOfA(['a', ...others(0, 64), 'a', 'a']) < together,
    '64 threads between two turns: the thread was closed, its term counted again, so it tells less',
  );
});
