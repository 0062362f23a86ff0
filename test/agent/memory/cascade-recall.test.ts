import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import * as chrono from 'chrono-node';

import { ConceptTracker } from '../../../agent/concepts/concept-tracker.js';
import { AgentMemory } from '../../../agent/memory/agent-memory.js';
import { Bm25Index } from '../../../agent/memory/bm25-index.js';
import { EpisodeIndex, episodeOf } from '../../../agent/memory/episode-index.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { mayNameTime, timeConstraint } from '../../../agent/memory/time-constraint.js';
import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { CompromiseExtractor } from '../../../shared/platform/concept-extractor.js';
import type { Embedder } from '../../../shared/platform/embedder.js';
import { loadTestEmbedder } from '../../helpers/embedding-model.js';
import { reopen } from '../../helpers/reopen.js';
import { tempDir } from '../../helpers/temp-dir.js';

const settings = ThymosConfigSchema.parse({}).memory;
const DAY = 86_400_000;
/** A fixed clock: Wednesday 15 May 2024, noon UTC. */
const NOW = Date.UTC(2024, 4, 15, 12);
const openMemory = async (embedder?: Embedder, memorySettings = settings) => {
  const path = join(tempDir('thymos-cascade-'), 'db');
  const store = await MemoryStore.open(path, { timeoutMs: 10_000 });
  return { path, store, memory: await AgentMemory.load(store, memorySettings, { embedder }) };
};
const ids = (hits: Awaited<ReturnType<AgentMemory['recall']>>) => hits.map((h) => h.memory.id);

describe('the cascade recall', () => {
  test('time in a query: relative dates against the clock, months, before and after a date or a thing, first and last', () => {
    const at = (phrase: string) => (phrase.includes('wolves') ? NOW - 3 * DAY : undefined);
    const day = (q: string) => timeConstraint(q, NOW, at);
    const yesterday = day('What did Bram say yesterday?')!;
    assert.equal(new Date(yesterday.from!).getDate(), 14);
    assert.equal(yesterday.to! - yesterday.from!, DAY);
    const may = day('Who came to the mill last May?')!;
    assert.deepEqual([new Date(may.from!).getFullYear(), new Date(may.from!).getMonth(), new Date(may.to!).getMonth()], [2023, 4, 5]);
    assert.deepEqual(Object.keys(day('What happened before 2 March 2024?')!), ['to']);
    assert.deepEqual(day('What happened after the wolves came?'), { from: NOW - 3 * DAY });
    assert.equal(day('When did Mira first visit the mill?')?.order, 'earliest');
    assert.equal(day('What did he say the last time?')?.order, 'latest');
    assert.equal(day('What does Bram forge?'), undefined);
    assert.equal(day('What happened after the storm?'), undefined, 'an anchor nothing matches constrains nothing');
  });

  test('structural and temporal stages: the named speaker and the named day lift their memories, and the breakdown says so', async () => {
    const { store, memory } = await openMemory();
    await memory.rememberMany(
      [
        {
          id: 'bram-old',
          content: 'The mill wheel needs a new axle',
          source: { kind: 'dialogue', by: 'Bram' },
          occurred_at: NOW - 30 * DAY,
        },
        { id: 'mira-yday', content: 'The mill wheel squeaks again', source: { kind: 'dialogue', by: 'Mira' }, occurred_at: NOW - DAY },
        {
          id: 'bram-yday',
          content: 'I fixed the mill wheel this morning',
          source: { kind: 'dialogue', by: 'Bram' },
          occurred_at: NOW - DAY + 3600_000,
        },
        { id: 'other', content: 'Bread is dear this month', source: { kind: 'dialogue', by: 'Tomas' }, occurred_at: NOW - DAY },
      ],
      NOW,
    );
    const hits = await memory.recall('What did Bram say about the mill wheel yesterday?', {
      k: 3,
      strategy: 'cascade',
      reinforce: false,
      now: NOW,
    });
    assert.equal(hits[0]?.memory.id, 'bram-yday');
    assert.deepEqual(hits[0]?.score.stages?.slice().sort(), ['lexical', 'structural', 'temporal']);
    assert.equal(hits[0]?.score.strategy, 'cascade');
    assert.ok(ids(hits).indexOf('bram-old') < 0 || ids(hits).indexOf('bram-old') > 0);
    const first = await memory.recall('When did Bram first talk of the mill wheel?', {
      k: 1,
      strategy: 'cascade',
      reinforce: false,
      now: NOW,
    });
    assert.equal(first[0]?.memory.id, 'bram-old', 'the first time: the earliest of the strong matches');
    await store.close();
  });

  test('an alias names the speaker too: the concept tracker adds the name it stands for', async () => {
    const { store, memory } = await openMemory();
    await ConceptTracker.attach(memory, store, {
      extractor: new CompromiseExtractor(),
      settings,
      aliases: [{ alias: 'the smith', target: 'bram_smith', name: 'Bram', type: 'person', source: 'domain' }],
    });
    await memory.rememberMany([
      { id: 'mira', content: 'The anvil cracked in the cold', source: { kind: 'dialogue', by: 'Mira' } },
      { id: 'bram', content: 'The anvil is mended now', source: { kind: 'dialogue', by: 'Bram' } },
    ]);
    const hits = await memory.recall('What did the smith say of the anvil?', { k: 2, strategy: 'cascade', reinforce: false });
    assert.equal(hits[0]?.memory.id, 'bram');
    assert.ok(hits[0]?.score.stages?.includes('structural'));
    await store.close();
  });

  test('the causal stage brings in what caused a match, up to five links back', async () => {
    const { store, memory } = await openMemory();
    const tracker = await ConceptTracker.attach(memory, store, { extractor: new CompromiseExtractor(), settings, aliases: [] });
    await memory.rememberMany([
      { id: 'c1', content: 'A hard frost split the sluice gate', source: { kind: 'told', by: 'x' } },
      { id: 'c2', content: 'Water rushed through the broken gate', source: { kind: 'told', by: 'x' } },
      { id: 'c3', content: 'The lower field flooded overnight', source: { kind: 'told', by: 'x' } },
      { id: 'effect', content: 'The barley harvest was lost', source: { kind: 'told', by: 'x' } },
      { id: 'noise', content: 'Tomas brewed a new ale', source: { kind: 'told', by: 'x' } },
    ]);
    await tracker.linkCause('effect', 'c3', 'the flood drowned it');
    await tracker.linkCause('c3', 'c2');
    await tracker.linkCause('c2', 'c1');
    const hits = await memory.recall('Why was the barley harvest lost?', { k: 5, strategy: 'cascade', reinforce: false });
    assert.equal(hits[0]?.memory.id, 'effect');
    for (const cause of ['c1', 'c2', 'c3']) {
      const hit = hits.find((h) => h.memory.id === cause);
      assert.ok(hit?.score.stages?.includes('causal'), `${cause} found by its causal link: ${JSON.stringify(hit?.score)}`);
    }
    assert.ok(!ids(hits).includes('noise'));
    await store.close();
  });

  test('an episode is a conversation thread on one day: its turns rise with its score, while events of one source stand alone', async () => {
    const { store, memory } = await openMemory();
    const game = { kind: 'event', by: 'game' } as const;
    await memory.rememberMany(
      [
        {
          id: 'wolves',
          content: 'Wolves took two sheep from the north pasture by the village',
          source: game,
          occurred_at: NOW - 2 * 3600_000,
        },
        { id: 'traveller', content: 'A traveller walked in by the north road', source: game, occurred_at: NOW - 3600_000 },
        {
          id: 'turn-1',
          content: 'Mira: wolves at the north pasture again, two sheep gone',
          source: { kind: 'dialogue', by: 'Mira', thread: 'talk' },
          occurred_at: NOW - 1800_000,
        },
        {
          id: 'turn-2',
          content: 'Bram: then the village needs a watch by night',
          source: { kind: 'dialogue', by: 'Bram', thread: 'talk' },
          occurred_at: NOW - 1700_000,
        },
      ],
      NOW,
    );
    const hits = await memory.recall('wolves at the north pasture', { k: 4, strategy: 'cascade', reinforce: false, now: NOW });
    assert.equal(hits[0]?.memory.id, 'wolves');
    const score = (id: string) => hits.find((h) => h.memory.id === id)?.score;
    // A memory of no thread is lifted by its own score, so it keeps its share of the best BM25 score.
    const traveller = score('traveller')!;
    assert.ok(
      Math.abs(traveller.final - traveller.bm25) < 0.001,
      `sharing a source with the best match lifts nothing: ${JSON.stringify(traveller)}`,
    );
    const turn2 = score('turn-2')!;
    assert.ok(turn2.final > turn2.bm25 + 0.1, `a turn of the thread that holds a strong match rises with it: ${JSON.stringify(turn2)}`);
    await store.close();
  });

  test('an episode is scored as one document: the turns of a session that holds the query words between them rise above those of a session with the best single turn', async () => {
    const { path, store, memory } = await openMemory();
    const said = (by: string, thread: string) => ({ kind: 'dialogue', by, thread }) as const;
    await memory.rememberMany(
      [
        { id: 'm1', content: 'the mill wheel stopped at dawn', source: said('Mira', 'morning'), occurred_at: NOW - 5 * 3600_000 },
        { id: 'm2', content: 'its axle cracked in the frost', source: said('Bram', 'morning'), occurred_at: NOW - 5 * 3600_000 + 60_000 },
        { id: 'm3', content: 'then we send for a smith today', source: said('Mira', 'morning'), occurred_at: NOW - 5 * 3600_000 + 120_000 },
        {
          id: 'e1',
          content: 'the mill wheel and its axle are painted green',
          source: said('Tomas', 'evening'),
          occurred_at: NOW - 3600_000,
        },
        {
          id: 'e2',
          content: 'the paint is still wet, mind your sleeves',
          source: said('Anna', 'evening'),
          occurred_at: NOW - 3600_000 + 60_000,
        },
      ],
      NOW,
    );
    const query = 'mill wheel axle frost';
    const rank = (hits: Awaited<ReturnType<AgentMemory['recall']>>, id: string) => ids(hits).indexOf(id);
    const alone = await memory.recall(query, { k: 5, strategy: 'cascade', reinforce: false, now: NOW, cascade: { episodeWeight: 0 } });
    assert.equal(alone[0]?.memory.id, 'e1', 'the best single turn is in the evening');
    assert.ok(rank(alone, 'e2') < rank(alone, 'm3'), `by its neighbours alone the evening's reply leads: ${ids(alone).join(' ')}`);
    const hits = await memory.recall(query, { k: 5, strategy: 'cascade', reinforce: false, now: NOW });
    assert.ok(rank(hits, 'm3') < rank(hits, 'e2'), `the morning holds every word of the query between its turns: ${ids(hits).join(' ')}`);
    await store.close();
    // Rebuilt from the database at start, the episodes rank as they did.
    const reopened = await reopen((timeoutMs) => MemoryStore.open(path, { timeoutMs }));
    const loaded = await AgentMemory.load(reopened, settings);
    assert.deepEqual(ids(await loaded.recall(query, { k: 5, strategy: 'cascade', reinforce: false, now: NOW })), ids(hits));
    await reopened.close();

    // The index itself: only threaded memories, one episode per thread and day, scored from one search's matches.
    const index = new EpisodeIndex();
    const words = new Bm25Index();
    const keep = (id: string, content: string, at: number, thread?: string) => {
      const m = {
        id,
        content,
        tags: [],
        source: thread ? { kind: 'dialogue', by: 'Mira', thread } : { kind: 'event', by: 'game' },
        created_at: at,
        occurred_at: at,
      };
      index.add(m, words.add(m));
    };
    keep('a', 'wolves at the fold', NOW, 't');
    keep('b', 'two sheep gone', NOW + 60_000, 't');
    keep('c', 'wolves again', NOW + DAY, 't');
    keep('d', 'wolves and sheep', NOW, undefined);
    assert.equal(index.size, 2, 'two days of one thread; the event is no episode');
    const today = episodeOf({ source: { kind: 'dialogue', by: 'Mira', thread: 't' }, created_at: NOW })!;
    const tomorrow = episodeOf({ source: { kind: 'dialogue', by: 'Mira', thread: 't' }, created_at: NOW + DAY })!;
    const scores = index.scores(new Set([today, tomorrow, 'nowhere@0']), words.match('wolves took sheep', 10).termsOf);
    assert.deepEqual([...scores.keys()], [today, tomorrow]);
    assert.ok(scores.get(tomorrow)! > 0);
    assert.ok(scores.get(today)! > scores.get(tomorrow)!, 'the day that holds both words scores higher');
    assert.deepEqual(index.scores(new Set([today]), words.match('', 10).termsOf), new Map([[today, 0]]));
  });

  test('meaning alone fills only what the exact stages left, flagged fuzzy; a wrong or empty query never throws', async () => {
    const { store, memory } = await openMemory(await loadTestEmbedder());
    await memory.rememberMany([
      { id: 'wolves', content: 'A pack of wolves killed two lambs', source: { kind: 'told', by: 'x' } },
      { id: 'bread', content: 'Tomas bakes bread at dawn', source: { kind: 'told', by: 'x' } },
    ]);
    await memory.vectorsReady();
    const hits = await memory.recall('predators attacked the sheep', { k: 1, strategy: 'cascade', reinforce: false });
    assert.equal(hits[0]?.memory.id, 'wolves');
    assert.equal(hits[0]?.score.fuzzy, true);
    assert.deepEqual(hits[0]?.score.stages, ['semantic']);
    const exact = await memory.recall('Tomas bakes bread', { k: 1, strategy: 'cascade', reinforce: false });
    assert.equal(exact[0]?.score.fuzzy, undefined, 'a word match is not fuzzy');
    for (const q of [
      '',
      '   ',
      '???',
      'before',
      'after after before',
      'the the the',
      '\u0000',
      'x'.repeat(2000),
      'between 31 February and never',
    ]) {
      await assert.doesNotReject(
        memory.recall(q, { k: 3, strategy: 'cascade', reinforce: false }),
        `query ${JSON.stringify(q.slice(0, 20))}`,
      );
    }
    await store.close();

    // Ranking by meaning and filling in one recall ask for the query's vector once.
    const real = await loadTestEmbedder();
    const asked: string[] = [];
    const counting: Embedder = { model: real.model, dims: real.dims, embed: (texts) => (asked.push(...texts), real.embed(texts)) };
    const both = await openMemory(counting);
    await both.memory.rememberMany([
      { id: 'wolves', content: 'A pack of wolves killed two lambs', source: { kind: 'told', by: 'x' } },
      { id: 'watch', content: 'The watch saw wolves near the sheep fold', source: { kind: 'told', by: 'x' } },
      { id: 'bread', content: 'Tomas bakes bread at dawn', source: { kind: 'told', by: 'x' } },
    ]);
    await both.memory.vectorsReady();
    const three = await both.memory.recall('wolves near the sheep', { k: 3, strategy: 'cascade', reinforce: false });
    assert.deepEqual(
      three.map((h) => [h.memory.id, h.score.fuzzy ?? false]),
      [
        ['watch', false],
        ['wolves', false],
        ['bread', true],
      ],
    );
    assert.equal(asked.filter((t) => t === 'wolves near the sheep').length, 1);
    await both.store.close();
  });

  test('meaning ranks within what the exact stages kept, at once for a memory not embedded yet, and never makes a recall wait past semantic_wait_ms', async () => {
    const real = await loadTestEmbedder();
    let gate: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (gate = resolve));
    let hold = false;
    const embedder: Embedder = {
      model: real.model,
      dims: real.dims,
      embed: async (texts) => (hold ? held.then(() => real.embed(texts)) : real.embed(texts)),
    };
    const told = { kind: 'told', by: 'x' } as const;
    const memories = [
      { id: 'howl', content: 'Wolves howled at the moon', source: told },
      { id: 'lambs', content: 'Wolves killed the lambs and ewes in the pasture', source: told },
    ];
    const query = 'wolves attacked the flock';
    const plain = await openMemory();
    await plain.memory.rememberMany(memories);
    const byWords = await plain.memory.recall(query, { k: 2, strategy: 'cascade', reinforce: false });
    assert.deepEqual(ids(byWords), ['howl', 'lambs'], 'without vectors the shorter match leads');
    await plain.store.close();

    const { store, memory } = await openMemory(embedder);
    await memory.rememberMany(memories);
    // No vectorsReady: the memories' own vectors may not be made yet; the recall asks for them with the query.
    const byMeaning = await memory.recall(query, { k: 2, strategy: 'cascade', reinforce: false });
    assert.deepEqual(ids(byMeaning), ['lambs', 'howl'], 'the match nearer in meaning rises');
    assert.ok(byMeaning[0]!.score.stages?.includes('semantic'), `meaning lifted it: ${JSON.stringify(byMeaning[0]!.score)}`);
    assert.ok(byMeaning[0]!.score.vector! > byMeaning[1]!.score.vector!, 'each carries its cosine to the query');
    assert.equal(byMeaning[0]!.score.fuzzy, undefined, 'a word match ranked by meaning is still a match');

    // An embedder that does not answer: the recall comes back (the embedder cannot answer before the gate opens) as words ranked it.
    await memory.vectorsReady();
    hold = true;
    const late = await memory.recall(query, { k: 2, strategy: 'cascade', reinforce: false });
    assert.deepEqual(ids(late), ['howl', 'lambs']);
    assert.ok(late.every((h) => h.score.vector === undefined && !h.score.stages?.includes('semantic')));
    gate!();
    await store.close();

    const off = await openMemory(real, { ...settings, semantic_wait_ms: 0 });
    await off.memory.rememberMany(memories);
    await off.memory.vectorsReady();
    assert.deepEqual(
      ids(await off.memory.recall(query, { k: 2, strategy: 'cascade', reinforce: false })),
      ['howl', 'lambs'],
      'semantic_wait_ms = 0 ranks by words alone',
    );
    await off.store.close();
  });
});

describe('which queries are worth a date parse', () => {
  test('every text in which chrono finds a time passes the check; plain ones do not', () => {
    // The intents sets are several hundred requests written as people write them; the sentences after
    // them use each word chrono's English parsers read.
    const texts = ['dev', 'held'].flatMap((half) =>
      (
        JSON.parse(readFileSync(join(import.meta.dirname, '../../../bench/intents', `${half}.json`), 'utf8')) as Array<{ intent: string }>
      ).map((c) => c.intent),
    );
    texts.push(
      'what happened last weekend',
      'this weekday',
      'see you tmrw',
      'overmorrow then',
      'at noon',
      'around midnight',
      'this morning',
      'last night',
      'a few hrs ago',
      'three days ago',
      'two weeks later',
      'next qtr',
      'in a couple of years',
      'the sat before',
      'on Thurs',
      'early in Sept',
      'by the end of the month',
      "five o'clock",
      'next w',
      'Was it in May?',
      'a year and a half from now',
      'within the hour',
    );
    const now = new Date(NOW);
    const parsed = texts.filter((t) => chrono.parse(t, now).length > 0);
    assert.ok(parsed.length >= 20, `chrono read ${parsed.length} of the texts`);
    assert.deepEqual(
      parsed.filter((t) => !mayNameTime(t)),
      [],
    );
    const plain = [
      'when did the bell ring',
      'Did you hear the bell at the mill?',
      'tell me about the wolves',
      'who is the captain of the guard',
    ];
    assert.deepEqual(plain.filter(mayNameTime), []);
    assert.equal(
      timeConstraint('when did the bell ring', NOW, () => undefined),
      undefined,
    );
  });
});
