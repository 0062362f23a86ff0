import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { intentWords } from '../../../agent/intents/intent-words.js';
import { englishBackground, ToolLikelihood } from '../../../agent/intents/tool-likelihood.js';

const lines = [
  ...['cancel my order before it ships', 'stop order ORD-1 from being sent', 'I no longer want this order'].map((t) => ({
    tool: 'cancel_order',
    words: intentWords(t),
  })),
  ...['cancel my subscription', 'stop my monthly plan renewing', 'end the subscription at the end of the month'].map((t) => ({
    tool: 'cancel_subscription',
    words: intentWords(t),
  })),
  ...['what is the weather tomorrow', 'will it rain in Paris'].map((t) => ({ tool: 'get_weather', words: intentWords(t) })),
];

describe("which tool the words are likely to mean, and whether any is, learned from the tools' own lines", () => {
  const likely = new ToolLikelihood(lines, { prior: 20 });

  test("a word one tool's lines use and its neighbour's do not tells the two apart; a word both use does not", () => {
    const plan = likely.score(intentWords('cancel the plan')).posterior;
    assert.ok(plan.get('cancel_subscription')! > 2 * plan.get('cancel_order')!, JSON.stringify([...plan]));
    const shared = likely.score(intentWords('cancel')).posterior;
    assert.ok(Math.abs(shared.get('cancel_order')! - shared.get('cancel_subscription')!) < 0.1, JSON.stringify([...shared]));
    assert.ok(shared.get('get_weather')! < shared.get('cancel_order')!);
  });

  test('the posterior is over every tool and sums to 1; words no line uses say nothing; without English there is no ratio', () => {
    const { posterior, ratio } = likely.score(intentWords('will it rain, and cancel flamingo'));
    assert.equal(posterior.size, 3);
    assert.ok(Math.abs([...posterior.values()].reduce((a, b) => a + b, 0) - 1) < 1e-9);
    assert.equal(ratio, undefined);
    assert.deepEqual(likely.score(intentWords('flamingo pancakes')), { posterior: new Map() });
    assert.deepEqual(new ToolLikelihood([], { prior: 20 }).score(['cancel']), { posterior: new Map() });
  });

  const stem = (w: string) => intentWords(w)[0];
  // A word list most frequent first, as the offline model's is: "order" common, "subscription" rare.
  const english = englishBackground(
    [
      'the',
      'it',
      'will',
      'order',
      'my',
      'stop',
      'end',
      'month',
      'want',
      'tomorrow',
      'parade',
      'rain',
      'weather',
      'flamingo',
      'subscription',
    ],
    stem,
    new Set(lines.flatMap((l) => l.words)),
  );
  const plain = new ToolLikelihood(lines, { prior: 20, english });

  test("Zipf's probabilities over a word list rank its words and sum to about 1", () => {
    assert.ok(english.probability.get(stem('order')!)! > english.probability.get(stem('subscription')!)!);
    assert.equal(english.probability.get(stem('parade')!), undefined, 'only the stems the lines use are kept');
    assert.equal(
      english.unlisted,
      english.probability.get(stem('subscription')!),
      'a word the list lacks is as rare as its last, rarest word',
    );
    const words = Array.from({ length: 1000 }, (_, i) => `w${i}`);
    const every = englishBackground(words, (w) => w, new Set(words)).probability;
    const total = [...every.values()].reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(total - 1) < 0.01, `${total}`);
    assert.ok(Math.abs(every.get('w0')! / every.get('w9')! - 10) < 1e-9, 'the word of rank r is r times rarer than the first');
    const merged = englishBackground(['cancel', 'cancelled', 'cancelling'], stem, new Set(['cancel'])).probability;
    assert.equal(merged.size, 1, 'words that share a stem share its probability');
  });

  test("the ratio says whether any tool explains the words: a word a tool's lines use counts for it, a word no line uses against every tool", () => {
    const fits = plain.score(intentWords('will it rain')).ratio!.get('get_weather')!;
    const half = plain.score(intentWords('will it rain flamingo parade')).ratio!.get('get_weather')!;
    assert.ok(fits > 0, `a tool's own words explain better than plain English: ${fits}`);
    assert.ok(half < fits, `words no line uses count against it: ${half} against ${fits}`);
    const rain = plain.score(intentWords('rain')).ratio!;
    assert.ok(rain.get('get_weather')! > rain.get('cancel_order')!, JSON.stringify([...rain]));
    assert.deepEqual(plain.score(intentWords('flamingo pancakes')), { posterior: new Map(), ratio: new Map() });
  });

  test("against plain English, a word everyone uses explains less than one only the tools' lines use", () => {
    const common = plain.score(intentWords('order')).ratio!.get('cancel_order')!;
    const rare = plain.score(intentWords('subscription')).ratio!.get('cancel_subscription')!;
    assert.ok(rare > common, `a rare word fits its tool better than a common one: ${rare} against ${common}`);
  });

  test("a tool's ratio does not depend on which other tools are granted: one tool alone is weighed as in a catalogue", () => {
    const alone = new ToolLikelihood(
      lines.filter((l) => l.tool === 'get_weather'),
      { prior: 20, english },
    );
    const said = intentWords('will it rain tomorrow');
    assert.ok(Math.abs(alone.score(said).ratio!.get('get_weather')! - plain.score(said).ratio!.get('get_weather')!) < 1e-9);
    assert.equal(alone.score(said).posterior.get('get_weather'), 1);
  });
});
