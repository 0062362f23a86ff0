import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { intentWords } from '../../../agent/intents/intent-words.js';
import { ToolLikelihood } from '../../../agent/intents/tool-likelihood.js';

const lines = [
  ...['cancel my order before it ships', 'stop order ORD-1 from being sent', 'I no longer want this order'].map((t) => ({ tool: 'cancel_order', words: intentWords(t) })),
  ...['cancel my subscription', 'stop my monthly plan renewing', 'end the subscription at the end of the month'].map((t) => ({ tool: 'cancel_subscription', words: intentWords(t) })),
  ...['what is the weather tomorrow', 'will it rain in Paris'].map((t) => ({ tool: 'get_weather', words: intentWords(t) })),
];

describe('which tool the words are likely to mean, learned from the tools\' own lines', () => {
  const likely = new ToolLikelihood(lines);

  test('a word one tool\'s lines use and its neighbour\'s do not tells the two apart; a word both use does not', () => {
    const plan = likely.posterior(intentWords('cancel the plan'));
    assert.ok(plan.get('cancel_subscription')! > 2 * plan.get('cancel_order')!, JSON.stringify([...plan]));
    const shared = likely.posterior(intentWords('cancel'));
    assert.ok(Math.abs(shared.get('cancel_order')! - shared.get('cancel_subscription')!) < 0.1, JSON.stringify([...shared]));
    assert.ok(shared.get('get_weather')! < shared.get('cancel_order')!);
  });

  test('the posterior is over every tool and sums to 1; words no line uses say nothing', () => {
    const p = likely.posterior(intentWords('will it rain, and cancel flamingo'));
    assert.equal(p.size, 3);
    assert.ok(Math.abs([...p.values()].reduce((a, b) => a + b, 0) - 1) < 1e-9);
    assert.deepEqual(likely.posterior(intentWords('flamingo pancakes')), new Map());
    assert.deepEqual(new ToolLikelihood([]).posterior(['cancel']), new Map());
  });
});
