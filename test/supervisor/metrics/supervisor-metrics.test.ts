import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SupervisorMetrics } from '../../../supervisor/metrics/supervisor-metrics.js';

test('/metrics counts model calls, tokens and cost per agent from heartbeat totals, across an agent whose totals start again', async () => {
  const metrics = new SupervisorMetrics();
  const url = await metrics.listen('127.0.0.1', 0);
  try {
    metrics.observeLlm('elder_rowan', { calls: 2, input_tokens: 300, output_tokens: 40, cost: 0.21 });
    // The same totals again (the next heartbeat) add nothing; new ones add the difference.
    metrics.observeLlm('elder_rowan', { calls: 2, input_tokens: 300, output_tokens: 40, cost: 0.21 });
    metrics.observeLlm('elder_rowan', { calls: 3, input_tokens: 450, output_tokens: 60, cost: 0.3 });
    // Totals lower than before: the agent's data was reset; they count from zero.
    metrics.observeLlm('mira_herbalist', { calls: 5, input_tokens: 10, output_tokens: 10, cost: 0 });
    metrics.observeLlm('mira_herbalist', { calls: 1, input_tokens: 7, output_tokens: 3, cost: 0 });
    const text = await (await fetch(url)).text();
    assert.match(text, /^thymos_llm_calls_total\{agent="elder_rowan"\} 3$/m);
    assert.match(text, /^thymos_llm_tokens_total\{agent="elder_rowan",direction="input"\} 450$/m);
    assert.match(text, /^thymos_llm_tokens_total\{agent="elder_rowan",direction="output"\} 60$/m);
    assert.match(text, /^thymos_llm_cost_total\{agent="elder_rowan"\} 0\.3$/m);
    assert.match(text, /^thymos_llm_calls_total\{agent="mira_herbalist"\} 6$/m);
    assert.match(text, /^thymos_llm_tokens_total\{agent="mira_herbalist",direction="input"\} 17$/m);
  } finally {
    await metrics.close();
  }
});
