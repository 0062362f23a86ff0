import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { ConceptTracker } from '../../../agent/concepts/concept-tracker.js';
import { MemoryConsolidator } from '../../../agent/consolidation/memory-consolidator.js';
import { AgentMemory } from '../../../agent/memory/agent-memory.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { type MemorySettings } from '../../../shared/config/agent-settings.js';
import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { aliasTable } from '../../../shared/domain/alias-table.js';
import { parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { ErrorCode } from '../../../shared/errors/errors.js';
import { CompromiseExtractor } from '../../../shared/platform/concept-extractor.js';
import { tempDir } from '../../helpers/temp-dir.js';

const DAY = 86_400_000;
const told = { kind: 'told', by: 't' };
const domain = parseDomainSchema({
  agents: { elder_rowan: { persona: { name: 'Elder Rowan' }, aliases: ['the old badger'] }, bram_smith: { persona: { name: 'Bram' } } },
  conceptTypes: {
    person: { attributes: { role: { required: true }, age: { type: 'number' } } },
    place: { attributes: { kind: { allowedValues: ['building', 'outdoors'] } } },
  },
});

async function setup(overrides: Partial<MemorySettings> = {}) {
  const settings = { ...ThymosConfigSchema.parse({}).memory, ...overrides };
  const store = await MemoryStore.open(join(tempDir('thymos-consolidate-'), 'db'), { timeoutMs: 10_000 });
  const memory = await AgentMemory.load(store, settings);
  const concepts = await ConceptTracker.attach(memory, store, {
    extractor: new CompromiseExtractor(),
    settings,
    aliases: aliasTable(domain),
    conceptTypes: domain.conceptTypes,
  });
  const consolidator = new MemoryConsolidator({ memory, store, concepts, settings });
  return { settings, store, memory, concepts, consolidator };
}

describe('consolidation', () => {
  test('concepts that recur become a theme insight pointing to its sources, which gain importance; a restated theme supersedes the old one', async () => {
    const { store, memory, settings, consolidator } = await setup();
    const t0 = Date.now() - 3 * DAY;
    await memory.remember({ id: 'm1', content: 'Elder Rowan asked Bram to forge a new plough', importance: 0.4, source: told }, t0);
    await memory.remember({ id: 'm2', content: 'Bram told Elder Rowan the iron ran out', importance: 0.4, source: told }, t0 + DAY);
    await memory.remember({ id: 'm3', content: 'The old badger paid Bram in grain', importance: 0.4, source: told }, t0 + 2 * DAY);
    await memory.remember({ id: 'other', content: 'The baker sold bread at dawn', importance: 0.4, source: told }, t0 + 2 * DAY);

    const first = await consolidator.consolidate();
    assert.equal(first.examined, 4);
    const theme = first.insights.find((i) => i.kind === 'theme');
    assert.ok(theme, JSON.stringify(first));
    assert.deepEqual(theme.sources, ['m1', 'm2', 'm3']);
    assert.match(theme.content, /Bram and Elder Rowan come up together in 3 memories/);
    const stored = memory.get(theme.id)!;
    assert.deepEqual(stored.derived_from, ['m1', 'm2', 'm3']);
    assert.equal(stored.source.kind, 'insight');
    for (const id of ['m1', 'm2', 'm3']) assert.equal(memory.get(id)!.importance, 0.4 + settings.theme_importance_step);
    assert.equal(memory.get('other')!.importance, 0.4);

    const again = await consolidator.consolidate();
    assert.deepEqual(again.insights, [], 'the same theme from the same memories is not written twice');
    assert.deepEqual(again.importance, []);

    await memory.remember({ id: 'm4', content: 'Elder Rowan thanked Bram for the plough', importance: 0.4, source: told });
    const third = await consolidator.consolidate();
    const restated = third.insights.find((i) => i.kind === 'theme')!;
    assert.deepEqual(restated.sources, ['m1', 'm2', 'm3', 'm4']);
    assert.deepEqual(third.superseded, [{ id: theme.id, by: restated.id, reason: 'theme restated from 3 to 4 source memories' }]);
    assert.deepEqual(
      third.importance.map((c) => c.id),
      ['m4'],
      'only the new source gains importance',
    );

    const reloaded = await AgentMemory.load(store, settings);
    const old = reloaded.get(theme.id)!;
    assert.equal(old.content, theme.content, 'the superseded insight is kept as it was');
    assert.equal(old.superseded_by, restated.id);
    assert.deepEqual(reloaded.get(restated.id)!.derived_from, ['m1', 'm2', 'm3', 'm4']);
    const found = await reloaded.recall('Bram Elder Rowan come up together', {
      k: 10,
      reinforce: false,
      filter: (m) => m.source.kind === 'insight',
    });
    assert.deepEqual(
      found.map((h) => h.memory.id),
      [restated.id],
      'recall leaves the superseded insight out',
    );
    const all = await reloaded.recall('Bram Elder Rowan come up together', {
      k: 10,
      reinforce: false,
      filter: (m) => m.source.kind === 'insight',
      includeSuperseded: true,
    });
    assert.deepEqual(new Set(all.map((h) => h.memory.id)), new Set([restated.id, theme.id]));
    await store.close();
  });

  test('a newer memory that says the opposite supersedes the older one, with a pointer and a reason; unrelated ones are left alone', async () => {
    const { store, memory, settings, consolidator } = await setup();
    const t0 = Date.now() - DAY;
    await memory.remember({ id: 'safe', content: 'The old mill is safe to visit at night', source: told }, t0);
    await memory.remember({ id: 'open', content: 'The bakery is open every morning', source: told }, t0);
    await memory.remember({ id: 'honest', content: 'The merchant Tobin is honest in his dealings', source: told }, t0);
    await memory.remember({ id: 'unsafe', content: "The old mill isn't safe to visit at night", source: told }, t0 + 1000);
    await memory.remember({ id: 'dishonest', content: 'The merchant Tobin is dishonest in his dealings', source: told }, t0 + 2000);
    await memory.remember({ id: 'shut', content: 'The smithy is not open today', source: told }, t0 + 3000);

    const report = await consolidator.consolidate();
    assert.deepEqual(
      report.superseded.map(({ id, by }) => ({ id, by })).sort((a, b) => a.id.localeCompare(b.id)),
      [
        { id: 'honest', by: 'dishonest' },
        { id: 'safe', by: 'unsafe' },
      ],
    );
    assert.match(report.superseded.find((s) => s.id === 'safe')!.reason, /contradicted by a newer memory \(unsafe\)/);
    const changed = report.insights.filter((i) => i.kind === 'contradiction');
    assert.equal(changed.length, 2);
    assert.deepEqual(changed.find((i) => i.sources[0] === 'safe')?.sources, ['safe', 'unsafe']);

    const reloaded = await AgentMemory.load(store, settings);
    assert.equal(reloaded.get('safe')!.content, 'The old mill is safe to visit at night', 'nothing is rewritten');
    assert.equal(reloaded.get('safe')!.superseded_by, 'unsafe');
    assert.ok(reloaded.get('open')!.superseded_by === undefined);
    const hits = await reloaded.recall('is the old mill safe at night', {
      k: 5,
      reinforce: false,
      filter: (m) => m.source.kind === 'told',
    });
    assert.deepEqual(
      hits.map((h) => h.memory.id),
      ['unsafe'],
    );
    const withOld = await reloaded.recall('is the old mill safe at night', {
      k: 5,
      reinforce: false,
      filter: (m) => m.source.kind === 'told',
      includeSuperseded: true,
    });
    assert.deepEqual(new Set(withOld.map((h) => h.memory.id)), new Set(['unsafe', 'safe']));
    assert.deepEqual((await consolidator.consolidate()).superseded, [], 'a second run finds nothing new');
    await store.close();
  });

  test('faded memories are demoted and a day of them compacted into a digest; nothing is deleted', async () => {
    const { store, memory, settings, consolidator } = await setup({ compact_min: 3 });
    const old = Date.UTC(2026, 0, 10, 9);
    for (let i = 0; i < 4; i++)
      await memory.remember(
        {
          id: `old${i}`,
          content: `Trivial chatter number ${i} about the weather and the geese`,
          importance: 0,
          tags: ['chatter'],
          source: told,
        },
        old + i * 60_000,
      );
    // A month old, but important and felt: stability 168 h × 3 × 2, strength e^(-720/1008) ≈ 0.49.
    await memory.remember(
      { id: 'vital', content: 'The weather spirit must never be angered', importance: 1, emotional_weight: 1, source: told },
      Date.now() - 30 * DAY,
    );
    await memory.remember({ id: 'fresh', content: 'Today the weather is fine', source: told });
    const before = memory.count;

    const report = await consolidator.consolidate();
    assert.deepEqual(report.demoted.sort(), ['old0', 'old1', 'old2', 'old3']);
    const digest = report.insights.find((i) => i.kind === 'digest')!;
    assert.deepEqual(digest.sources, ['old0', 'old1', 'old2', 'old3']);
    assert.match(digest.content, /^Faded memories of 2026-01-10 \(4\): Trivial chatter number 0 .* \| Trivial chatter number 1/);
    assert.equal(memory.count, before + report.insights.length, 'every memory is still there');

    const reloaded = await AgentMemory.load(store, settings);
    for (let i = 0; i < 4; i++) {
      assert.ok(reloaded.get(`old${i}`)!.demoted_at !== undefined);
      assert.equal(reloaded.get(`old${i}`)!.compacted_into, digest.id);
    }
    const hits = await reloaded.recall('chatter about geese', { k: 10, reinforce: false });
    assert.deepEqual(
      hits.map((h) => h.memory.id),
      [digest.id],
      'recall finds the digest, not the faded memories',
    );
    const faded = await reloaded.recall('chatter about geese', { k: 10, reinforce: false, includeDemoted: true });
    assert.equal(faded.filter((h) => h.memory.id.startsWith('old')).length, 4);
    assert.deepEqual((await consolidator.consolidate()).insights, [], 'compacted memories are not compacted again');
    await store.close();
  });

  test('a scope (thread, tag, time range) limits what is examined; a dry run writes nothing', async () => {
    const { store, memory, consolidator } = await setup({ theme_min_support: 2 });
    const t0 = Date.now() - 10 * DAY;
    await memory.remember(
      {
        id: 'a1',
        content: 'Mira and Bram argued about the fence',
        tags: ['farm'],
        source: { kind: 'dialogue', by: 'mira', thread: 'mira' },
      },
      t0,
    );
    await memory.remember(
      { id: 'a2', content: 'Mira and Bram made peace over ale', tags: ['farm'], source: { kind: 'dialogue', by: 'mira', thread: 'mira' } },
      t0 + 5 * DAY,
    );
    await memory.remember(
      { id: 'b1', content: 'Mira and Bram walked to the market', source: { kind: 'dialogue', by: 'tobin', thread: 'tobin' } },
      t0 + 5 * DAY,
    );

    const session = await consolidator.consolidate({ session: 'mira' }, { dryRun: true });
    assert.equal(session.examined, 2);
    assert.equal(session.dry_run, true);
    assert.deepEqual(session.insights.find((i) => i.kind === 'theme')?.sources, ['a1', 'a2']);
    assert.equal(memory.count, 3, 'a dry run writes nothing');
    assert.equal(memory.get('a1')!.importance, 0.5);

    assert.equal((await consolidator.consolidate({ tag: 'farm' }, { dryRun: true })).examined, 2);
    assert.equal((await consolidator.consolidate({ since: t0 + DAY }, { dryRun: true })).examined, 2);
    assert.equal(
      (await consolidator.consolidate({ since: t0 + DAY, until: t0 + 6 * DAY, session: 'tobin' }, { dryRun: true })).examined,
      1,
    );

    const written = await consolidator.consolidate({ session: 'mira' });
    const insight = memory.get(written.insights[0]!.id)!;
    assert.match(insight.insight_key!, /@session=mira$/);
    await store.close();
  });

  test('a change to an unknown memory is refused and nothing of the consolidation is written', async () => {
    const { store, memory, settings } = await setup();
    await memory.remember({ id: 'kept', content: 'The well is deep', source: told });
    await assert.rejects(
      memory.commit(
        [{ id: 'new', content: 'An insight', source: { kind: 'insight', by: 'test' } }],
        [{ id: 'nope', changes: { importance: 1 } }],
      ),
      (err: { code?: string }) => err.code === ErrorCode.NOT_FOUND,
    );
    const reloaded = await AgentMemory.load(store, settings);
    assert.equal(reloaded.count, 1);
    assert.equal(reloaded.get('new'), undefined);
    await store.close();
  });
});

describe('concepts of older memories and concept types', () => {
  test('memories stored before concepts were on get their concepts when the tracker attaches', async () => {
    const settings = ThymosConfigSchema.parse({}).memory;
    const store = await MemoryStore.open(join(tempDir('thymos-backfill-'), 'db'), { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    await memory.rememberMany(
      Array.from({ length: 70 }, (_, i) => ({ id: `m${i}`, content: `Mira sold ${i} apples to Tobin`, source: told })),
    );
    const tracker = await ConceptTracker.attach(memory, store, { extractor: new CompromiseExtractor(), settings, aliases: [] });
    await memory.settle();
    assert.equal(tracker.get('Mira')?.mentions, 70);
    assert.deepEqual(await store.withoutConcepts(), [], 'every memory is marked as done');
    // Attaching again finds nothing left to do, and counts nothing twice.
    const second = await ConceptTracker.attach(memory, store, { extractor: new CompromiseExtractor(), settings, aliases: [] });
    await memory.settle();
    assert.equal(second.get('Mira')?.mentions, 70);
    await store.close();
  });

  test('describing a concept is checked against the domain’s concept types and kept', async () => {
    const { store, memory, settings, concepts } = await setup();
    const refusals: Array<[Parameters<ConceptTracker['describe']>[1], RegExp]> = [
      [{ type: 'dragon' }, /^type: no concept type "dragon"; the domain declares person, place$/],
      [
        { type: 'person', attributes: { role: 'miller', height: 3 } },
        /^attributes\.height: person has no attribute "height"; it declares role, age$/,
      ],
      [{ type: 'person', attributes: { role: 'miller', age: 'old' } }, /^attributes\.age: expected number; got "old"$/],
      [{ type: 'person', attributes: { age: 60 } }, /^attributes: person requires role$/],
      [{ type: 'place', attributes: { kind: 'cave' } }, /^attributes\.kind: expected one of building, outdoors; got "cave"$/],
    ];
    for (const [input, message] of refusals) {
      await assert.rejects(
        concepts.describe('Old Miller', input),
        (err: { code?: string; message: string }) => err.code === ErrorCode.INVALID_INPUT && message.test(err.message),
        JSON.stringify(input),
      );
    }
    assert.equal(concepts.get('Old Miller'), undefined, 'a refused description stores nothing');
    const miller = await concepts.describe('Old Miller', { type: 'person', attributes: { role: 'miller' } });
    assert.deepEqual(miller.attributes, { role: 'miller' });
    const older = await concepts.describe('Old Miller', { attributes: { age: 61 } });
    assert.deepEqual(older.attributes, { role: 'miller', age: 61 }, 'attributes merge with what was known');
    const reattached = await ConceptTracker.attach(memory, store, {
      extractor: new CompromiseExtractor(),
      settings,
      aliases: [],
      conceptTypes: domain.conceptTypes,
    });
    assert.deepEqual(reattached.get('old miller')?.attributes, { role: 'miller', age: 61 });
    assert.equal(reattached.get('old miller')?.type, 'person');
    await store.close();
  });
});
