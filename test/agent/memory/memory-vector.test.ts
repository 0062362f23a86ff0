import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';

import { AgentMemory } from '../../../agent/memory/agent-memory.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { openEmbeddedSurreal } from '../../../shared/engines/embedded-surreal.js';
import { ErrorCode, type ThymosError } from '../../../shared/errors/errors.js';
import { dot, type Embedder } from '../../../shared/platform/embedder.js';
import { FastembedEmbedder } from '../../../supervisor/embedding/fastembed-embedder.js';
import { loadTestEmbedder } from '../../helpers/embedding-model.js';
import { reopen } from '../../helpers/reopen.js';
import { tempDir } from '../../helpers/temp-dir.js';

const settings = ThymosConfigSchema.parse({}).memory;
const told = { kind: 'told', by: 't' };

/** Counts calls and can be made to fail, around a real embedder. */
class WatchedEmbedder implements Embedder {
  calls = 0;
  texts = 0;
  failing = false;
  constructor(readonly inner: Embedder) {}
  get model() {
    return this.inner.model;
  }
  get dims() {
    return this.inner.dims;
  }
  async embed(texts: readonly string[]) {
    this.calls++;
    this.texts += texts.length;
    if (this.failing) throw new Error('embedder down');
    return this.inner.embed(texts);
  }
}

const openStore = () => MemoryStore.open(join(tempDir('thymos-vec-'), 'db'), { timeoutMs: 10_000 });

describe('vector and hybrid recall with the offline model through fastembed', () => {
  let embedder: FastembedEmbedder;
  before(async () => {
    embedder = await loadTestEmbedder();
  });

  test('the built model loads through fastembed and places meanings near each other', async () => {
    assert.equal(embedder.dims, 100);
    assert.equal(embedder.model, 'custom:glove-100d');
    const [wolves, lambs, bread] = await embedder.embed([
      'The wolves attacked the sheep',
      'A pack of wolves killed two lambs',
      'I baked bread this morning',
    ]);
    assert.ok(Math.abs(dot(wolves!, wolves!) - 1) < 1e-4, 'unit length');
    assert.ok(
      dot(wolves!, lambs!) > dot(wolves!, bread!) + 0.2,
      `wolves~lambs ${dot(wolves!, lambs!)} vs wolves~bread ${dot(wolves!, bread!)}`,
    );
  });

  test('vector recall finds by meaning what shares no word; hybrid keeps word matches; scores say how', async () => {
    const store = await openStore();
    const memory = await AgentMemory.load(store, settings, { embedder });
    await memory.rememberMany([
      { id: 'liar', content: 'Bram seemed dishonest about the missing silver', source: told },
      { id: 'bread', content: 'Tomas bakes bread at dawn for the tavern', source: told },
      { id: 'wolves', content: 'Wolves were seen near the north pasture', source: told },
    ]);
    assert.deepEqual(await memory.recall('betrayal', { k: 3, strategy: 'bm25', reinforce: false }), [], 'no shared word');
    const [first] = await memory.recall('betrayal and deceit', { k: 3, strategy: 'vector', reinforce: false });
    assert.equal(first?.memory.id, 'liar');
    assert.equal(first?.score.strategy, 'vector');
    assert.ok(first!.score.vector! > 0 && first!.score.final > 0);
    const hybrid = await memory.recall('bread at the tavern', { k: 3, strategy: 'hybrid', reinforce: false });
    assert.equal(hybrid[0]?.memory.id, 'bread');
    assert.deepEqual(Object.keys(hybrid[0]!.score).sort(), ['bm25', 'final', 'strategy', 'strength', 'vector']);
    assert.equal(hybrid[0]!.score.strategy, 'hybrid');
    await store.close();
  });

  test('vectors are stored with the memory: loading again embeds nothing', async () => {
    const store = await openStore();
    const watched = new WatchedEmbedder(embedder);
    const memory = await AgentMemory.load(store, settings, { embedder: watched });
    await memory.rememberMany(Array.from({ length: 50 }, (_, i) => ({ content: `Memory number ${i} about the harvest`, source: told })));
    await memory.vectorsReady(); // vectors are made after the write is acknowledged
    assert.equal(watched.texts, 50, 'one batch for the write');
    assert.equal((await store.embeddings(embedder.model)).size, 50);
    const again = new WatchedEmbedder(embedder);
    const reloaded = await AgentMemory.load(store, settings, { embedder: again });
    await reloaded.vectorsReady();
    assert.equal(again.calls, 0);
    assert.equal((await reloaded.recall('harvest', { k: 5, strategy: 'vector', reinforce: false })).length, 5);
    await store.close();
  });

  test('a vector is stored as bytes and read back exactly', async () => {
    const dir = join(tempDir('thymos-vec-'), 'db');
    const store = await reopen((timeoutMs) => MemoryStore.open(dir, { timeoutMs }));
    // A view into a larger buffer: only its own floats may be stored.
    const backing = Float32Array.from([9, 0.1, -2.5, 3.75, 1e-7, 9]);
    const view = backing.subarray(1, 5);
    await store.apply(
      [
        {
          id: 'fresh',
          content: 'new',
          importance: 0.5,
          emotional_weight: 0,
          tags: [],
          source: { kind: 'told', by: 't' },
          created_at: 1,
          last_accessed: 1,
          access_count: 0,
        },
      ],
      [],
      { vectors: { model: 'm', byId: new Map([['fresh', view]]) } },
    );
    await store.apply(
      [
        {
          id: 'later',
          content: 'embedded later',
          importance: 0.5,
          emotional_weight: 0,
          tags: [],
          source: { kind: 'told', by: 't' },
          created_at: 1,
          last_accessed: 1,
          access_count: 0,
        },
      ],
      [],
    );
    await store.setEmbeddings('m', new Map([['later', Float32Array.from([1, -1])]]));
    const stored = await store.embeddings('m');
    assert.deepEqual([...stored.get('fresh')!], [...view]);
    assert.deepEqual([...stored.get('later')!], [1, -1]);
    await store.close();
    const raw = await reopen((timeoutMs) => openEmbeddedSurreal(dir, { namespace: 'thymos', database: 'agent', timeoutMs }));
    const [kinds] = await raw.query<[Array<{ id: unknown; bytes: boolean }>]>(
      'SELECT id, type::is_bytes(embedding) AS bytes FROM memory ORDER BY id',
    );
    assert.deepEqual(
      kinds.map((k) => k.bytes),
      [true, true],
      'fresh and later are bytes',
    );
    await raw.close();
  });

  test('a write never waits for the embedder; a vector recall waits for the vectors of earlier writes', async () => {
    const store = await openStore();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Only the memory's own embedding is held back; the query's goes through at once.
    const gated: Embedder = {
      model: embedder.model,
      dims: embedder.dims,
      embed: async (texts) => {
        if (texts.includes('A storm flattened the barley')) await gate;
        return embedder.embed(texts);
      },
    };
    const memory = await AgentMemory.load(store, settings, { embedder: gated });
    await memory.remember({ id: 'storm', content: 'A storm flattened the barley', source: told });
    assert.equal((await store.embeddings(embedder.model)).size, 0, 'stored and acknowledged while the embedder is still busy');
    let answered = false;
    const pending = memory
      .recall('bad weather ruined the crops', { k: 1, strategy: 'vector', reinforce: false })
      .then((hits) => ((answered = true), hits));
    await new Promise((r) => setImmediate(r));
    assert.equal(answered, false, 'the recall waits for the queued vectors');
    release();
    assert.equal((await pending)[0]?.memory.id, 'storm');
    await store.close();
  });

  test('with the embedder down memories are still stored, recall falls back to BM25, and vectors are filled in later', async () => {
    const store = await openStore();
    const watched = new WatchedEmbedder(embedder);
    watched.failing = true;
    const memory = await AgentMemory.load(store, settings, { embedder: watched });
    await memory.remember({ id: 'fire', content: 'The granary caught fire last night', source: told });
    assert.equal(memory.count, 1, 'the write did not fail');
    const hits = await memory.recall('granary fire', { k: 3, strategy: 'hybrid', reinforce: false });
    assert.equal(hits[0]?.memory.id, 'fire');
    assert.equal(hits[0]?.score.strategy, 'bm25', 'says it fell back');
    const noEmbedder = await AgentMemory.load(store, settings);
    assert.equal((await noEmbedder.recall('granary', { k: 3, strategy: 'vector', reinforce: false }))[0]?.score.strategy, 'bm25');

    watched.failing = false;
    const healed = await AgentMemory.load(store, settings, { embedder: watched });
    await healed.vectorsReady();
    assert.equal((await store.embeddings(embedder.model)).size, 1, 'the missing vector was made and stored');
    const [found] = await healed.recall('a blaze destroyed the grain store', { k: 1, strategy: 'vector', reinforce: false });
    assert.equal(found?.memory.id, 'fire');
    await store.close();
  });

  test('a missing model, an unknown model and an unreachable download are EMBEDDER_UNAVAILABLE, naming what was wrong', async () => {
    const cases: Array<[Parameters<typeof FastembedEmbedder.load>[0], RegExp]> = [
      [
        { model: 'custom', modelDir: '/nonexistent/model', cacheDir: tmpdir(), maxLength: 128 },
        /no embedding model at \/nonexistent\/model\/model\.onnx: build it with npm run build:model/,
      ],
      [
        { model: 'word2vec-9000', modelDir: '', cacheDir: tmpdir(), maxLength: 128 },
        /no fastembed model "word2vec-9000"; expected "custom" or one of .*fast-bge-small-en-v1\.5/,
      ],
    ];
    // The real download path, where the network is closed (as in CI): it fails fast and says why.
    // Where fastembed's storage resolves, the download would just work, so that case is left out.
    const online = await lookup('storage.googleapis.com').then(
      () => true,
      () => false,
    );
    if (!online)
      cases.push([
        { model: 'fast-bge-small-en-v1.5', modelDir: '', cacheDir: tempDir('thymos-fe-'), maxLength: 128 },
        /cannot load embedding model fast-bge-small-en-v1\.5/,
      ]);
    for (const [options, pattern] of cases) {
      await assert.rejects(
        FastembedEmbedder.load(options),
        (e: ThymosError) => e.code === ErrorCode.EMBEDDER_UNAVAILABLE && pattern.test(e.message),
      );
    }
  });
});
