import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { SharedConceptExtractor } from '../../../agent/links/shared-concept-extractor.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { serveCoded } from '../../../shared/nats/coded-responder.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import type { ConceptExtractor, ExtractedConcept } from '../../../shared/platform/concept-extractor.js';
import { ConceptRequestSchema } from '../../../shared/protocol/concept-protocol.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

/** A local extractor that says which texts it was asked about. */
class CountingExtractor implements ConceptExtractor {
  asked: string[] = [];
  extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    this.asked.push(...texts);
    return Promise.resolve(texts.map(() => [{ name: 'Local', type: 'person' }]));
  }
}

describe('an agent’s shared concept extractor', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  const names = new FleetNames('conceptx');
  const logger = createLogger({ level: 'silent' });

  before(async () => {
    nats = await startNatsServer();
    nc = await connectNats({ servers: nats.url, name: 'test-concepts' });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  test('unlinked, or linked with no service answering, it extracts in its own process', async () => {
    const local = new CountingExtractor();
    const extractor = new SharedConceptExtractor(logger, local);
    assert.deepEqual(await extractor.extract(['Mira went north']), [[{ name: 'Local', type: 'person' }]]);
    extractor.link(nc, names);
    assert.deepEqual(await extractor.extract(['Bram stayed']), [[{ name: 'Local', type: 'person' }]]);
    assert.deepEqual(local.asked, ['Mira went north', 'Bram stayed']);
  });

  test('linked, it asks the fleet’s service, in requests under the size limit, and keeps the order', async () => {
    const requests: string[][] = [];
    const sub = serveCoded(
      nc,
      {
        subject: names.concepts,
        schema: ConceptRequestSchema,
        handle: async ({ texts }) => {
          requests.push(texts);
          return { result: { concepts: texts.map((t) => [{ name: `Service ${t.length}`, type: 'place' }]) } };
        },
      },
      logger,
    );
    try {
      const local = new CountingExtractor();
      const extractor = new SharedConceptExtractor(logger, local);
      extractor.link(nc, names);
      const texts = ['a'.repeat(90_000), 'b'.repeat(90_000), 'c'.repeat(90_000), ...Array.from({ length: 1100 }, (_, i) => `t${i}`)];
      const found = await extractor.extract(texts);
      assert.equal(local.asked.length, 0);
      assert.deepEqual(
        found.map((c) => c[0]!.name),
        texts.map((t) => `Service ${t.length}`),
      );
      // 256,000 characters and 1,024 texts at most per request.
      assert.deepEqual(
        requests.map((r) => r.length),
        [2, 1024, 77],
      );
    } finally {
      sub.unsubscribe();
    }
  });

  test('a reply that does not fit the request is not trusted: the texts are extracted here', async () => {
    const sub = serveCoded(
      nc,
      { subject: names.concepts, schema: ConceptRequestSchema, handle: async () => ({ result: { concepts: [] } }) },
      logger,
    );
    try {
      const local = new CountingExtractor();
      const extractor = new SharedConceptExtractor(logger, local);
      extractor.link(nc, names);
      assert.deepEqual(await extractor.extract(['one', 'two']), [[{ name: 'Local', type: 'person' }], [{ name: 'Local', type: 'person' }]]);
      assert.deepEqual(local.asked, ['one', 'two']);
    } finally {
      sub.unsubscribe();
    }
  });
});
