import assert from 'node:assert/strict';
import { cpSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { ErrorCode, type ThymosError } from '../../../shared/errors/errors.js';
import { dot } from '../../../shared/platform/embedder.js';
import { StaticEmbedder } from '../../../shared/platform/static-embedder.js';
import { ensureModel, loadTestEmbedder } from '../../helpers/embedding-model.js';
import { tempDir } from '../../helpers/temp-dir.js';

describe('the offline model read without ONNX Runtime', () => {
  test('gives the vectors fastembed gives for the same model, punctuation, case, unknown words and long texts included', async () => {
    const dir = ensureModel();
    const own = StaticEmbedder.load(dir, { maxLength: 128 });
    const fast = await loadTestEmbedder();
    assert.equal(own.model, fast.model, 'one name, so vectors stored by either stay valid');
    assert.equal(own.dims, fast.dims);
    const texts = [
      'The wolves attacked the sheep',
      'WOLVES, at the Mill-Gate!? (again)…',
      "Don't tell Bram about the smugglers' cove",
      'zxqv unknownword 1234 the',
      'Ünïcödé café — «quoted» text; semi:colon',
      Array.from({ length: 300 }, (_, i) => ['harvest', 'river', 'mill', 'bread', 'wolf'][i % 5]).join(' '),
    ];
    const [a, b] = [await own.embed(texts), await fast.embed(texts)];
    texts.forEach((t, i) => assert.ok(dot(a[i]!, b[i]!) > 0.99999, `${JSON.stringify(t.slice(0, 40))}: cosine ${dot(a[i]!, b[i]!)}`));
  });

  test('read on demand (as an agent does), the vectors are the same as read whole; a word that names an object method is still only a word', async () => {
    const whole = StaticEmbedder.load(ensureModel(), { maxLength: 128 });
    const rows = StaticEmbedder.load(ensureModel(), { maxLength: 128, resident: false });
    const texts = [
      'refund the broken kettle for order ORD-10001',
      'constructor toString __proto__ hasOwnProperty valueOf',
      'the the the wolves',
      'zxqv',
    ];
    const [a, b] = [await whole.embed(texts), await rows.embed(texts)];
    texts.forEach((t, i) => assert.deepEqual([...b[i]!], [...a[i]!], t));
    assert.ok(
      a[0]!.some((x) => x !== 0) && a[1]!.every((x) => Number.isFinite(x)),
      'known words count; method names are looked up as words, never as functions',
    );
  });

  test('lists its words most frequent first, as GloVe orders them, special tokens left out', () => {
    const words = StaticEmbedder.load(ensureModel(), { maxLength: 128, resident: false }).wordsByFrequency();
    assert.equal(words.length, 50_000);
    assert.deepEqual(words.slice(0, 3), ['the', 'of', 'to']);
    assert.ok(!words.some((w) => /^\[.*\]$/.test(w)));
    assert.ok(words.indexOf('order') < words.indexOf('refund') && words.indexOf('refund') > 0, 'a common word before a rarer one');
  });

  test('a text of only unknown words is the zero vector, as in fastembed, not NaN', async () => {
    const own = StaticEmbedder.load(ensureModel(), { maxLength: 128 });
    const [v] = await own.embed(['qqqzzz ...']);
    assert.ok(v!.every((x) => x === 0));
  });

  test('a missing or damaged model is EMBEDDER_UNAVAILABLE naming the file', () => {
    const dir = join(tempDir('thymos-static-'), 'm');
    assert.equal(StaticEmbedder.isStaticModel(dir), false);
    assert.throws(
      () => StaticEmbedder.load(dir, { maxLength: 128 }),
      (e: ThymosError) => e.code === ErrorCode.EMBEDDER_UNAVAILABLE && /m\/tokenizer\.json/.test(e.message),
    );
    cpSync(ensureModel(), dir, { recursive: true });
    truncateSync(join(dir, 'vectors.f32'), 1000);
    for (const resident of [true, false])
      assert.throws(
        () => StaticEmbedder.load(dir, { maxLength: 128, resident }),
        (e: ThymosError) =>
          e.code === ErrorCode.EMBEDDER_UNAVAILABLE && /vectors\.f32 holds 1000 bytes, expected 50002 tokens × 100 floats/.test(e.message),
      );
    writeFileSync(join(dir, 'config.json'), '{not json');
    assert.throws(
      () => StaticEmbedder.load(dir, { maxLength: 128 }),
      (e: ThymosError) => e.code === ErrorCode.EMBEDDER_UNAVAILABLE && /is damaged/.test(e.message),
    );
  });
});
