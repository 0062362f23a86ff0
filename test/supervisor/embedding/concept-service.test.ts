import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { CompromiseExtractor, type ConceptExtractor, type ExtractedConcept } from '../../../shared/platform/concept-extractor.js';
import { ConceptService } from '../../../supervisor/embedding/concept-service.js';

/** The real tagger, counting the texts it is asked about. */
class CountingExtractor implements ConceptExtractor {
  readonly inner = new CompromiseExtractor();
  asked: string[] = [];
  extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    this.asked.push(...texts);
    return this.inner.extract(texts);
  }
}

describe('the fleet’s concept service', () => {
  test('ten agents asking about one event at once cost one extraction, and later asks none', async () => {
    const counting = new CountingExtractor();
    const service = new ConceptService(counting);
    const event = 'bench.local: Mira saw wolves near Millbrook at dawn';
    const answers = await Promise.all(Array.from({ length: 10 }, () => service.extract([event, event])));
    for (const a of answers) assert.deepEqual(a, answers[0]);
    assert.ok(
      answers[0]![0]!.some((c) => c.name === 'Mira' && c.type === 'person'),
      JSON.stringify(answers[0]),
    );
    assert.deepEqual(counting.asked, [event]);
    await service.extract([event, 'Bram stayed at the forge']);
    assert.deepEqual(counting.asked, [event, 'Bram stayed at the forge']);
    assert.equal(service.stats.texts, 22);
  });

  test('an extractor that fails fails the request, and the text is tried again next time', async () => {
    let fail = true;
    const service = new ConceptService({
      extract: (texts) =>
        fail ? Promise.reject(new Error('tagger broke')) : Promise.resolve(texts.map(() => [{ name: 'Ok', type: 'person' }])),
    });
    await assert.rejects(service.extract(['Mira']), /tagger broke/);
    fail = false;
    assert.deepEqual(await service.extract(['Mira']), [[{ name: 'Ok', type: 'person' }]]);
  });
});
