import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';

import { IntentResolver } from '../../../agent/intents/intent-resolver.js';
import { ToolRanker } from '../../../agent/intents/tool-ranker.js';
import { loadDomainSchema } from '../../../shared/domain/domain-schema.js';
import type { Tools } from '../../../shared/domain/tool-schema.js';
import { StaticEmbedder } from '../../../shared/platform/static-embedder.js';
import { ensureModel } from '../../helpers/embedding-model.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/** The ranker's decision over the support desk's catalogue: the bars a tool must pass to be called, with the offline model and without it. */
describe('when the ranker trusts its best tool', () => {
  let support: Tools;
  let embedder: StaticEmbedder;
  let ranker: ToolRanker;

  before(async () => {
    support = (await loadDomainSchema(join(REPO_ROOT, 'examples', 'support', 'tools.pkl'))).tools;
    embedder = StaticEmbedder.load(ensureModel(), { maxLength: 256 });
    ranker = await ToolRanker.build(support, { embedder });
  });

  const cancel = 'please cancel order ORD-12345 before it ships, I ordered it by mistake';
  const track = 'track the shipment of order ORD-48213, I want the tracking number';

  test('a tool that writes must pass the ratio bar of tools that write, one that reads the bar of tools that read', async () => {
    const chosen = await ranker.rank(cancel);
    assert.equal(chosen.chosen, 'cancel_order', JSON.stringify(chosen.best));
    assert.equal(support.cancel_order!.sideEffect === 'read_only', false);
    const strictWrites = await ToolRanker.build(support, { embedder, tuning: { ratioToWrite: 1_000 } });
    const refused = await strictWrites.rank(cancel);
    assert.equal(refused.chosen, undefined);
    assert.equal(refused.refused, 'none');
    assert.equal(refused.candidates[0]?.tool, 'cancel_order', 'refused, it is still the first candidate');
    assert.equal((await strictWrites.rank(track)).chosen, 'track_shipment', 'the bar of tools that write is not that of tools that read');
    const strictReads = await ToolRanker.build(support, { embedder, tuning: { leastRatio: 1_000 } });
    assert.equal((await strictReads.rank(track)).chosen, undefined);
    assert.equal((await strictReads.rank(cancel)).chosen, 'cancel_order');
  });

  test("saying a tool's words again does not explain the intent any better", async () => {
    const once = await ranker.rank('refund');
    const often = await ranker.rank('refund refund refund refund refund refund');
    assert.ok(once.best && often.best);
    assert.equal(often.best.ratio, once.best.ratio);
    assert.equal(often.chosen, once.chosen);
  });

  test("the same intent ranks the same, its words' neighbours remembered or not, and after what is remembered is cleared", async () => {
    const first = await ranker.rank(track);
    assert.deepEqual(await ranker.rank(track), first);
    // 2,100 words nobody has said before: what is remembered fills and is cleared on the way.
    for (let i = 0; i < 21; i++) await ranker.rank(Array.from({ length: 100 }, (_, j) => `zq${i}x${j}`).join(' '));
    assert.deepEqual(await ranker.rank(track), first);
  });

  test('without the offline model, a tool that writes is never called and one that reads needs the higher bars; confidence is at most one half', async () => {
    const wordsOnly = await IntentResolver.build(support);
    const write = await wordsOnly.resolve(cancel);
    assert.equal(write.call, undefined, JSON.stringify(write));
    assert.equal(write.outcome, 'none');
    assert.equal(write.candidates[0]?.tool, 'cancel_order');
    assert.ok(write.confidence <= 0.5);
    const read = await wordsOnly.resolve(track);
    assert.deepEqual(read.call, { tool: 'track_shipment', arguments: { order_id: 'ORD-48213' } });
    assert.ok(read.confidence <= 0.5);
    for (const text of ['thanks', 'teach me how to fish, the danger is fire', 'what time is it in Tokyo'])
      assert.equal((await wordsOnly.resolve(text)).call, undefined, text);
  });
});
