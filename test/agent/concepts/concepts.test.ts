import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { ConceptTracker } from '../../../agent/concepts/concept-tracker.js';
import { AgentMemory } from '../../../agent/memory/agent-memory.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { aliasTable } from '../../../shared/domain/alias-table.js';
import { parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { CompromiseExtractor } from '../../../shared/platform/concept-extractor.js';
import { tempDir } from '../../helpers/temp-dir.js';

const settings = ThymosConfigSchema.parse({}).memory;
const told = { kind: 'told', by: 't' };
const domain = parseDomainSchema({
  agents: {
    elder_rowan: { persona: { name: 'Elder Rowan' }, aliases: ['the old badger'] },
    bram_smith: { persona: { name: 'Bram' } },
  },
  aliasPatterns: [{ pattern: 'the smith', target: 'bram_smith' }],
  relationshipTypes: {
    trusts: { properties: { strength: { type: 'number', min: 0, max: 1, defaultValue: 0.5 } } },
    knows: { symmetric: true },
  },
});

async function setup() {
  const store = await MemoryStore.open(join(tempDir('thymos-concepts-'), 'db'), { timeoutMs: 10_000 });
  // Hook failures are only logged: collect them so a test sees them.
  const warnings: string[] = [];
  const logger = { warn: (o: { err?: string }, msg: string) => warnings.push(`${msg}: ${o.err ?? ''}`), debug: () => undefined } as never;
  const memory = await AgentMemory.load(store, settings, { logger });
  const tracker = await ConceptTracker.attach(memory, store, {
    extractor: new CompromiseExtractor(),
    settings,
    aliases: aliasTable(domain),
    relationshipTypes: domain.relationshipTypes,
    logger,
  });
  return { store, memory, tracker, warnings };
}

describe('concepts and aliases', () => {
  test('an alias in a question finds the memories of the one it names', async () => {
    const { store, memory } = await setup();
    await memory.remember({ id: 'warning', content: 'Elder Rowan warned the council about the wolves', source: told });
    await memory.remember({ id: 'bread', content: 'The baker sold bread at dawn', source: told });
    const hits = await memory.recall('what did the old badger say', { k: 3, reinforce: false });
    assert.equal(hits[0]?.memory.id, 'warning');
    const plain = await AgentMemory.load(store, settings);
    assert.deepEqual(
      (await plain.recall('what did the old badger say', { k: 3, reinforce: false })).map((h) => h.memory.id),
      [],
      'without alias resolution, no word matches',
    );
    await store.close();
  });

  test('people, places and organisations are found, named by alias, counted and moved up the tiers', async () => {
    const { store, memory, tracker, warnings } = await setup();
    await memory.rememberMany([
      { content: 'Mira gathered silverleaf on the road to London', importance: 0.2, source: told },
      { content: 'The smith mended the gate for the Town Guard', importance: 0.2, source: told },
      { content: 'Mira says the river is rising', importance: 0.2, source: told },
    ]);
    await memory.settle();
    const mira = tracker.get('mira');
    assert.equal(mira?.type, 'person');
    assert.equal(mira?.mentions, 2);
    assert.equal(mira?.tier, 'provisional', '2 mentions');
    assert.equal(tracker.get('london')?.type, 'place');
    const smith = tracker.get('the smith');
    assert.equal(smith?.key, 'bram_smith', 'an alias pattern names the agent');
    assert.equal(smith?.name, 'Bram');
    assert.deepEqual(smith?.aliases.map((a) => [a.text, a.source]).sort(), [
      ['Bram', 'agent'],
      ['bram_smith', 'agent'],
      ['the smith', 'domain'],
    ]);
    assert.equal(smith?.memories.length, 1);

    await memory.rememberMany(
      Array.from({ length: 3 }, (_, i) => ({ content: `Mira brewed remedy number ${i}`, importance: 0.1, source: told })),
    );
    await memory.settle();
    assert.equal(tracker.get('Mira')?.tier, 'tracked', '5 mentions');
    await memory.remember({ content: 'Elder Rowan named a new heir', importance: 1, source: told });
    await memory.remember({ content: 'Elder Rowan fell ill', importance: 1, source: told });
    await memory.remember({ content: 'Elder Rowan recovered', importance: 1, source: told });
    await memory.settle();
    assert.equal(tracker.get('the old badger')?.tier, 'tracked', 'three important memories: significance 3');
    assert.deepEqual(
      tracker
        .list('tracked')
        .map((c) => c.key)
        .sort(),
      ['elder_rowan', 'mira'],
    );

    // Everything is in the database: a new tracker on the same store sees the same.
    const again = await ConceptTracker.attach(await AgentMemory.load(store, settings), store, {
      extractor: new CompromiseExtractor(),
      settings,
      aliases: aliasTable(domain),
    });
    assert.equal(again.get('mira')?.mentions, 5);
    assert.equal(again.get('mira')?.memories.length, 5);
    assert.equal(again.get('elder rowan')?.tier, 'tracked');
    assert.deepEqual(warnings, [], 'no hook failed');
    await store.close();
  });

  test('another name a text gives someone is learned as an extracted alias: it finds their memories, holds across a reload, and never takes a name the domain gave', async () => {
    const { store, memory, tracker, warnings } = await setup();
    await memory.remember({ id: 'fence', content: 'Hal, whom the children call the grey miller, mended the fence.', source: told });
    await memory.remember({ id: 'flour', content: 'Hal ground the last of the flour', source: told });
    // "the smith" is the domain's: a text calling someone else so leaves it with Bram.
    await memory.remember({ id: 'claim', content: 'Tomas, known as the smith, poured the ale.', source: told });
    await memory.settle();
    const hal = tracker.get('the grey miller');
    assert.equal(hal?.key, 'hal', 'the alias names Hal');
    assert.equal(hal?.name, 'Hal', 'by the name the text gave beside it');
    assert.deepEqual(hal?.aliases, [{ text: 'the grey miller', type: 'person', source: 'extracted' }]);
    assert.deepEqual(hal?.memories.sort(), ['fence', 'flour']);
    assert.equal(tracker.get('the smith')?.key, 'bram_smith');
    const hits = await memory.recall('what did the grey miller grind', { k: 3, reinforce: false });
    assert.ok(
      hits.some((h) => h.memory.id === 'flour'),
      `the alias finds a memory that only names Hal: ${JSON.stringify(hits.map((h) => h.memory.id))}`,
    );

    const again = await ConceptTracker.attach(await AgentMemory.load(store, settings), store, {
      extractor: new CompromiseExtractor(),
      settings,
      aliases: aliasTable(domain),
    });
    assert.equal(again.get('the grey miller')?.key, 'hal', 'stored with the concepts');
    assert.deepEqual(warnings, []);
    await store.close();
  });

  test('a failing hook is logged and never fails the write', async () => {
    const { store, memory } = await setup();
    const warnings: string[] = [];
    const logged = await AgentMemory.load(store, settings, { logger: { warn: (_o: unknown, msg: string) => warnings.push(msg) } as never });
    logged.on('created', () => {
      throw new Error('hook broke');
    });
    const seen: string[] = [];
    logged.on('created', (records) => void seen.push(...records.map((r) => r.id)));
    await logged.remember({ id: 'kept', content: 'Stored despite the hook', source: told });
    await logged.settle();
    assert.equal(logged.get('kept')?.content, 'Stored despite the hook');
    assert.deepEqual(seen, ['kept'], 'the other hook still ran');
    assert.deepEqual(warnings, ['memory hook failed']);
    void memory;
    await store.close();
  });

  test('typed relationships: validated properties and defaults, symmetric both ways, walked up to 5 hops, kept across a reload', async () => {
    const { store, memory, tracker } = await setup();
    assert.deepEqual(await tracker.link('the old badger', 'the smith', 'trusts', { strength: 0.8 }), {
      from: 'elder_rowan',
      to: 'bram_smith',
      type: 'trusts',
      properties: { strength: 0.8 },
    });
    assert.deepEqual((await tracker.link('Bram', 'Mira', 'trusts')).properties, { strength: 0.5 }, 'default applied');
    await tracker.link('Mira', 'Tomas', 'knows');
    await tracker.link('Tomas', 'Fenn', 'trusts');
    await tracker.link('Fenn', 'Lysa', 'trusts');
    await tracker.link('Lysa', 'Oswin', 'trusts');
    await tracker.link('Oswin', 'Hale', 'trusts');
    const bad: Array<[Promise<unknown>, RegExp]> = [
      [tracker.link('a', 'b', 'hates'), /no relationship type "hates"; the domain declares trusts, knows/],
      [tracker.link('a', 'b', 'trusts', { strength: 2 }), /properties\.strength: expected 0 to 1; got 2/],
      [tracker.link('a', 'b', 'trusts', { strength: 'high' }), /properties\.strength: expected number/],
      [tracker.link('a', 'b', 'trusts', { since: 3 }), /trusts has no property "since"; it declares strength/],
      [tracker.link('Mira', 'mira', 'knows'), /not related to itself/],
    ];
    for (const [promise, pattern] of bad) await assert.rejects(promise, (e: Error) => pattern.test(e.message));
    assert.deepEqual(
      tracker
        .related('tomas', 1)
        .map((r) => r.key)
        .sort(),
      ['fenn', 'mira'],
      'knows is symmetric',
    );
    const far = tracker.related('Elder Rowan', 5);
    assert.deepEqual(
      far.map((r) => [r.key, r.hops]),
      [
        ['bram_smith', 1],
        ['mira', 2],
        ['tomas', 3],
        ['fenn', 4],
        ['lysa', 5],
      ],
      'at most 5 hops: oswin is 6 away',
    );
    assert.deepEqual(
      far[1]!.path.map((p) => p.type),
      ['trusts', 'trusts'],
    );
    assert.deepEqual(tracker.related('Elder Rowan', 9).length, 5, 'depth is capped at 5');
    assert.deepEqual(
      tracker.related('mira', 3, ['trusts']).map((r) => r.key),
      [],
      'only along trusts: mira trusts nobody',
    );

    await memory.remember({ id: 'rain', content: 'It rained for a week', source: told });
    await memory.remember({ id: 'flood', content: 'The river flooded the mill', source: told });
    await memory.remember({ id: 'bread', content: 'Bread ran short in the village', source: told });
    await tracker.linkCause('flood', 'rain', 'the river rose');
    await tracker.linkCause('bread', 'flood', 'no flour');
    assert.deepEqual(
      tracker.causes('bread').map((c) => [c.memory, c.hops, c.reason]),
      [
        ['flood', 1, 'no flour'],
        ['rain', 2, 'the river rose'],
      ],
    );
    await assert.rejects(tracker.linkCause('bread', 'nope'), /to: no memory "nope"/);

    const again = await ConceptTracker.attach(await AgentMemory.load(store, settings), store, {
      extractor: new CompromiseExtractor(),
      settings,
      aliases: aliasTable(domain),
      relationshipTypes: domain.relationshipTypes,
    });
    assert.deepEqual(
      again.related('the old badger', 2).map((r) => r.key),
      ['bram_smith', 'mira'],
    );
    assert.deepEqual(
      again.causes('bread').map((c) => c.memory),
      ['flood', 'rain'],
    );
    await store.close();
  });
});

describe('concepts and vectors at hand are written with their memory', () => {
  /** An extractor and an embedder that know some texts already (as a heard event's hints make them) and count what they are asked. */
  function knowing(known: Map<string, { concepts: Array<{ name: string; type: string }>; vector: Float32Array }>) {
    const asked = { extract: 0, embed: 0 };
    const extractor = {
      extract: async (texts: readonly string[]) => {
        asked.extract += texts.length;
        return new CompromiseExtractor().extract(texts);
      },
      known: (text: string) => known.get(text)?.concepts,
    };
    const embedder = {
      model: 'test-model',
      dims: 2,
      embed: async (texts: readonly string[]) => {
        asked.embed += texts.length;
        return texts.map(() => Float32Array.of(1, 0));
      },
      known: (text: string) => known.get(text)?.vector,
    };
    return { asked, extractor, embedder };
  }

  test('one transaction: no extraction and no embedding asked, kept across a reload, not found again at restart', async () => {
    const dir = join(tempDir('thymos-together-'), 'db');
    const text = 'Wolves were seen near Millbrook';
    const { asked, extractor, embedder } = knowing(
      new Map([[text, { concepts: [{ name: 'Millbrook', type: 'place' }], vector: Float32Array.of(0, 1) }]]),
    );
    const store = await MemoryStore.open(dir, { timeoutMs: 10_000 });
    const writes: string[] = [];
    for (const name of ['apply', 'saveConcepts', 'setEmbeddings'] as const) {
      const original = store[name].bind(store) as (...a: unknown[]) => Promise<void>;
      (store as unknown as Record<string, unknown>)[name] = (...a: unknown[]) => (writes.push(name), original(...a));
    }
    const memory = await AgentMemory.load(store, settings, { embedder });
    const tracker = await ConceptTracker.attach(memory, store, { extractor, settings, aliases: [] });
    writes.length = 0;
    await memory.remember({ id: 'ev-1', content: text, importance: 0.8, source: { kind: 'event', by: 'world' } });
    await memory.settle();
    await memory.vectorsReady();
    assert.deepEqual(writes, ['apply'], 'the memory, its vector and its concepts in one write');
    assert.deepEqual(asked, { extract: 0, embed: 0 });
    assert.equal(tracker.get('millbrook')?.mentions, 1);
    assert.deepEqual(tracker.get('millbrook')?.memories, ['ev-1']);
    assert.equal(
      (await memory.recall('anything', { k: 1, strategy: 'vector', reinforce: false }))[0]?.memory.id,
      'ev-1',
      'its vector is indexed',
    );
    // What a restart would load, read back from the database.
    assert.deepEqual(await store.withoutConcepts(), [], 'a restart does not extract it again');
    assert.deepEqual([...(await store.embeddings('test-model')).get('ev-1')!], [0, 1]);
    const again = await ConceptTracker.attach(await AgentMemory.load(store, settings), store, { extractor, settings, aliases: [] });
    assert.deepEqual(again.get('millbrook')?.memories, ['ev-1']);
    assert.deepEqual(asked, { extract: 0, embed: 1 }, "only the recall's query was embedded");
    await store.close();
  });

  test('a text without hints is extracted and embedded as before; a failed write takes back what it counted', async () => {
    const known = 'Mira met the council';
    const { asked, extractor, embedder } = knowing(
      new Map([[known, { concepts: [{ name: 'Mira', type: 'person' }], vector: Float32Array.of(0, 1) }]]),
    );
    const store = await MemoryStore.open(join(tempDir('thymos-together-'), 'db'), { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings, { embedder });
    const tracker = await ConceptTracker.attach(memory, store, { extractor, settings, aliases: [] });
    const apply = store.apply.bind(store);
    await memory.remember({ id: 'm0', content: 'Mira sold herbs', importance: 0.3, source: told });
    await memory.settle();
    const before = tracker.get('mira');
    store.apply = () => Promise.reject(new Error('disk full'));
    await assert.rejects(memory.remember({ id: 'm1', content: known, importance: 0.9, source: told }), /disk full/);
    const after = tracker.get('mira');
    const counted = (c: typeof after) =>
      c && { mentions: c.mentions, significance: Math.round(c.significance * 1000) / 1000, tier: c.tier, memories: c.memories };
    assert.deepEqual(
      counted(after),
      counted(before),
      'nothing counted for a memory that was not stored: mentions, significance and tier as they were',
    );
    store.apply = apply;
    await memory.rememberMany([
      { id: 'm2', content: 'Mira walked to the mill', source: told },
      { id: 'm3', content: known, source: told },
    ]);
    await memory.settle();
    await memory.vectorsReady();
    assert.deepEqual(asked, { extract: 2, embed: 2 }, 'only the texts without hints are asked for');
    assert.deepEqual(tracker.get('mira')?.memories.sort(), ['m0', 'm2', 'm3'], 'the counts build on each other');
    assert.equal(tracker.get('mira')?.mentions, 3);
    await store.close();
  });
});
