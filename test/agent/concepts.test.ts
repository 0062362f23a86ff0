import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { AgentMemory } from '../../agent/agent-memory.js';
import { CompromiseExtractor } from '../../agent/concept-extractor.js';
import { ConceptTracker } from '../../agent/concept-tracker.js';
import { MemoryStore } from '../../agent/memory-store.js';
import { aliasTable } from '../../shared/alias-table.js';
import { parseDomainSchema } from '../../shared/domain-schema.js';
import { ThymosConfigSchema } from '../../shared/thymos-config.js';

const settings = ThymosConfigSchema.parse({}).memory;
const told = { kind: 'told', by: 't' };
const domain = parseDomainSchema({
  agents: {
    elder_rowan: { persona: { name: 'Elder Rowan' }, aliases: ['the old badger'] },
    bram_smith: { persona: { name: 'Bram' } },
  },
  aliasPatterns: [{ pattern: 'the smith', target: 'bram_smith' }],
});

async function setup() {
  const store = await MemoryStore.open(join(mkdtempSync(join(tmpdir(), 'thymos-concepts-')), 'db'), { timeoutMs: 10_000 });
  // Hook failures are only logged: collect them so a test sees them.
  const warnings: string[] = [];
  const logger = { warn: (o: { err?: string }, msg: string) => warnings.push(`${msg}: ${o.err ?? ''}`), debug: () => undefined } as never;
  const memory = await AgentMemory.load(store, settings, { logger });
  const tracker = await ConceptTracker.attach(memory, store, { extractor: new CompromiseExtractor(), settings, aliases: aliasTable(domain), logger });
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
    assert.deepEqual((await plain.recall('what did the old badger say', { k: 3, reinforce: false })).map((h) => h.memory.id), [], 'without alias resolution, no word matches');
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
    assert.deepEqual(smith?.aliases.map((a) => [a.text, a.source]).sort(), [['Bram', 'agent'], ['bram_smith', 'agent'], ['the smith', 'domain']]);
    assert.equal(smith?.memories.length, 1);

    await memory.rememberMany(Array.from({ length: 3 }, (_, i) => ({ content: `Mira brewed remedy number ${i}`, importance: 0.1, source: told })));
    await memory.settle();
    assert.equal(tracker.get('Mira')?.tier, 'tracked', '5 mentions');
    await memory.remember({ content: 'Elder Rowan named a new heir', importance: 1, source: told });
    await memory.remember({ content: 'Elder Rowan fell ill', importance: 1, source: told });
    await memory.remember({ content: 'Elder Rowan recovered', importance: 1, source: told });
    await memory.settle();
    assert.equal(tracker.get('the old badger')?.tier, 'tracked', 'three important memories: significance 3');
    assert.deepEqual(tracker.list('tracked').map((c) => c.key).sort(), ['elder_rowan', 'mira']);

    // Everything is in the database: a new tracker on the same store sees the same.
    const again = await ConceptTracker.attach(await AgentMemory.load(store, settings), store, { extractor: new CompromiseExtractor(), settings, aliases: aliasTable(domain) });
    assert.equal(again.get('mira')?.mentions, 5);
    assert.equal(again.get('mira')?.memories.length, 5);
    assert.equal(again.get('elder rowan')?.tier, 'tracked');
    assert.deepEqual(warnings, [], 'no hook failed');
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
});
