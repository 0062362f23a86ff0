import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';

import { fillArguments } from '../../../agent/intents/argument-filler.js';
import { IntentResolver } from '../../../agent/intents/intent-resolver.js';
import { asksWhetherDone, intentWords, negatesAction } from '../../../agent/intents/intent-words.js';
import { loadDomainSchema, parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import type { Tools } from '../../../shared/domain/tool-schema.js';
import { StaticEmbedder } from '../../../shared/platform/static-embedder.js';
import { ensureModel } from '../../helpers/embedding-model.js';
import { fuzzStrings } from '../../helpers/fuzz.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

const NOW = new Date('2026-06-10T09:00:00');

/**
 * Intent resolution over the support desk's catalogue (examples/support/tools.pkl, read through
 * Pkl) with the offline model the project builds: plain words to a call, to candidates and
 * what is missing, or to nothing.
 */
describe('intent resolution', () => {
  let support: Tools;
  let embedder: StaticEmbedder;
  let resolver: IntentResolver;

  before(async () => {
    support = (await loadDomainSchema(join(REPO_ROOT, 'examples', 'support', 'tools.pkl'))).tools;
    embedder = StaticEmbedder.load(ensureModel(), { maxLength: 256 });
    resolver = await IntentResolver.build(support, { embedder });
  });

  test('a confident, complete intent becomes a call with its arguments; nothing runs', async () => {
    const a = await resolver.resolve('track the shipment of order ORD-48213, I want the tracking number', undefined, NOW);
    assert.equal(a.outcome, 'call', JSON.stringify(a));
    assert.deepEqual(a.call, { tool: 'track_shipment', arguments: { order_id: 'ORD-48213' } });
    assert.equal(a.candidates[0]!.tool, 'track_shipment');
    assert.ok(a.confidence > 0.5 && a.confidence <= 1);
    assert.match(a.candidates[0]!.why, /^words [\d.]+ \(.*track/);
  });

  test('an intent that leaves a required value out names the tool and what is missing, and makes no call', async () => {
    const a = await resolver.resolve('track the shipment of my order, I want the tracking number', undefined, NOW);
    assert.equal(a.outcome, 'incomplete', JSON.stringify(a));
    assert.equal(a.tool, 'track_shipment');
    assert.deepEqual(a.missing, ['order_id']);
    assert.equal(a.call, undefined);
  });

  test('an incomplete answer holds the values the words do give, so a caller asks only for the rest', async () => {
    const a = await resolver.resolve('change the email of customer CUS-20481', undefined, NOW);
    assert.equal(a.outcome, 'incomplete', JSON.stringify(a));
    assert.equal(a.tool, 'update_customer_email');
    assert.deepEqual(a.missing, ['new_email']);
    assert.deepEqual(a.arguments, { customer_id: 'CUS-20481' });
    const done = await resolver.resolve('change the email of customer CUS-20481 to sam.new@riverside.io', undefined, NOW);
    assert.deepEqual(done.call, {
      tool: 'update_customer_email',
      arguments: { customer_id: 'CUS-20481', new_email: 'sam.new@riverside.io' },
    });
  });

  test('the context can give what the intent leaves out', async () => {
    const a = await resolver.resolve(
      'track the shipment of my order, I want the tracking number',
      'the customer wrote about ORD-11111 yesterday',
      NOW,
    );
    assert.deepEqual(a.call, { tool: 'track_shipment', arguments: { order_id: 'ORD-11111' } });
  });

  test('words that refuse what a tool does, or ask whether it was done, never call it when it changes something; the tool stays a candidate', async () => {
    for (const [text, tool] of [
      ["don't cancel my order ORD-12345, it is not a duplicate order", 'cancel_order'],
      ['Do NOT refund ORD-12345 yet, the customer still has the item', 'refund_order'],
    ] as const) {
      const a = await resolver.resolve(text, undefined, NOW);
      assert.equal(a.outcome, 'none', `${text}: ${JSON.stringify(a)}`);
      assert.equal(a.call, undefined);
      assert.equal(a.candidates[0]!.tool, tool);
      assert.match(a.note ?? '', new RegExp(`the words say not to do what ${tool} does: no call`));
    }
    for (const text of ['why was my order ORD-12345 cancelled?', 'who cancelled ORD-12345']) {
      const a = await resolver.resolve(text, undefined, NOW);
      assert.equal(a.outcome, 'none', `${text}: ${JSON.stringify(a)}`);
      assert.match(a.note ?? '', /the words ask whether someone did what cancel_order does: no call/);
    }
    assert.deepEqual(
      [
        'was ORD-12345 refunded?',
        'why was it refunded',
        'can you get it refunded?',
        'is it too late to refund it?',
        'refunded twice, why?',
      ].map((t) => asksWhetherDone(t, 'refund_order')),
      [true, true, false, false, false],
    );
    const asks = await resolver.resolve("I don't want it any more, please cancel ORD-12345", undefined, NOW);
    assert.equal(asks.call?.tool ?? asks.tool, 'cancel_order', 'a negation in another clause refuses nothing');
    assert.deepEqual(
      [
        "don't cancel it",
        'I do not want it cancelled',
        'never refunded',
        "I don't want it, cancel it",
        'cancel it, not the other one',
        'not sure: cancel it',
      ].map((t) => negatesAction(t, t.includes('refund') ? 'refund_order' : 'cancel_order')),
      [true, true, true, false, false, false],
    );
  });

  test('an intent no tool does gets candidates and no call; so do empty, huge and foreign ones, coded, never thrown', async () => {
    for (const text of ['tell me a joke about penguins', 'what is the square root of 144?', 'ok thanks']) {
      const a = await resolver.resolve(text, undefined, NOW);
      assert.equal(a.call, undefined, text);
      assert.equal(a.tool, undefined, text);
      assert.ok(['none', 'ambiguous'].includes(a.outcome), `${text}: ${a.outcome}`);
    }
    assert.equal((await resolver.resolve('   ')).outcome, 'empty');
    assert.equal((await resolver.resolve(`refund ${'very '.repeat(600)}much`)).outcome, 'too_long');
    const french = await resolver.resolve("Je voudrais annuler ma commande ORD-12345 avant qu'elle parte");
    assert.equal(french.outcome, 'unsupported_language');
    assert.deepEqual([french.call, french.tool, french.confidence], [undefined, undefined, 0]);
    assert.ok(french.candidates.length > 0, 'the candidates its values suggest, to offer');
    assert.equal((await resolver.resolve('我想取消我的订单 ORD-12345')).outcome, 'unsupported_language');
    // Words that name an object's own properties are only words.
    for (const text of ['constructor', 'toString the constructor of __proto__ three times', 'hasOwnProperty valueOf'])
      assert.ok(['none', 'ambiguous', 'incomplete', 'call'].includes((await resolver.resolve(text, undefined, NOW)).outcome), text);
  });

  test('only the granted tools are candidates, and only their metadata counts, never what their executor says', async () => {
    const tools = parseDomainSchema(
      {
        tools: {
          brew_tea: {
            description: 'Brew a pot of tea',
            examples: ['make me a cup of tea', 'put the kettle on'],
            sideEffect: 'writes_local',
            executor: { kind: 'http', method: 'POST', url: 'http://127.0.0.1:9/refund-order-now' },
          },
          lookup_order: {
            description: 'Look up an order',
            input: { order_id: { pattern: 'ORD-[0-9]{5}' } },
            sideEffect: 'read_only',
            executor: { kind: 'http', url: 'http://127.0.0.1:9/orders/{order_id}' },
          },
        },
      },
      join(REPO_ROOT, 'test.pkl'),
    ).tools;
    const small = await IntentResolver.build({ brew_tea: tools.brew_tea! }, { embedder });
    const a = await small.resolve('refund order now', undefined, NOW);
    assert.equal(a.call, undefined, "the URL's words are not the tool's");
    assert.ok(!a.candidates.some((c) => c.score > 0.3), JSON.stringify(a.candidates));
    const b = await small.resolve('look up order ORD-12345', undefined, NOW);
    assert.ok(!b.candidates.some((c) => c.tool === 'lookup_order'), 'a tool not granted is never a candidate');
  });

  test('a call with side effects is never guessed: an intent two such tools fit nearly alike makes none', async () => {
    // Refunds exist twice (under 50 and any amount): an amount says which; without one, nothing is called.
    const a = await resolver.resolve('refund ORD-22222', undefined, NOW);
    assert.equal(a.call, undefined, JSON.stringify(a));
  });

  test("a word one or two letters from the metadata's is read as a typo only when it is no word of its own", async () => {
    const tools = parseDomainSchema(
      {
        tools: {
          cancel_quest: {
            description: 'Take a quest off the board',
            examples: ['call off the search for the goat, it came home'],
            sideEffect: 'writes_external',
            executor: { kind: 'http', method: 'POST', url: 'http://127.0.0.1:9/cancel' },
          },
          migrate: {
            description: 'Run the database migrations',
            examples: ['migrate the users database'],
            sideEffect: 'writes_external',
            executor: { kind: 'http', method: 'POST', url: 'http://127.0.0.1:9/migrate' },
          },
        },
      },
      join(REPO_ROOT, 'test.pkl'),
    ).tools;
    const small = await IntentResolver.build(tools, { embedder });
    assert.ok(embedder.hasWord('cave') && !embedder.hasWord('migrte'));
    const cave = await small.resolve('hunt the cave bear', undefined, NOW);
    assert.ok(
      !cave.candidates.some((c) => /~?came\b/.test(c.why.split(' in ')[0]!)),
      `"cave" is a word, not "came" misspelled: ${JSON.stringify(cave.candidates)}`,
    );
    const typo = await small.resolve('migrte the users database', undefined, NOW);
    assert.equal(typo.candidates[0]?.tool, 'migrate');
    assert.match(typo.candidates[0]!.why, /\(migrat/);
  });

  test('fuzzed intents never throw, and answer a known outcome', async () => {
    const outcomes = new Set(['call', 'incomplete', 'ambiguous', 'none', 'empty', 'too_long', 'unsupported_language']);
    for (const text of fuzzStrings(150, 7)) {
      const a = await resolver.resolve(text, text.slice(0, 50), NOW);
      assert.ok(outcomes.has(a.outcome), JSON.stringify({ text, a }));
      if (a.call) assert.ok(support[a.call.tool], 'a call names a granted tool');
    }
  });
});

describe('the offline argument filler', () => {
  const tools = parseDomainSchema(
    {
      tools: {
        schedule: {
          description: 'Schedule a meeting',
          input: {
            title: { description: 'What it is about' },
            start: { pattern: '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}', description: 'When it starts, ISO 8601' },
            duration_minutes: { type: 'integer', min: 5, max: 480, description: 'How long, in minutes' },
            attendees: { list: true, pattern: '[^@\\s]+@[^@\\s]+\\.[^@\\s]+' },
            room: { type: 'enum', values: ['aurora', 'borealis'], required: false },
          },
          sideEffect: 'writes_external',
          executor: { kind: 'http', method: 'POST', url: 'http://127.0.0.1:9/meetings', body: ['title'] },
        },
        give: {
          description: 'Give an item',
          input: {
            npc: { pattern: '[a-z][a-z0-9_]{0,47}', description: 'The NPC who gives it' },
            quantity: { type: 'integer', min: 1, max: 99 },
          },
          sideEffect: 'writes_external',
          executor: { kind: 'http', method: 'POST', url: 'http://127.0.0.1:9/give' },
        },
      },
    },
    join(REPO_ROOT, 'test.pkl'),
  ).tools;

  test('dates through chrono-node, numbers by the words that name them, quoted text, every email for a list, enum values', () => {
    const f = fillArguments(
      tools.schedule!,
      'book "Budget review" next Tuesday at 3pm for 45 minutes in aurora with ann@x.io and bo@y.org',
      { now: NOW },
    );
    assert.deepEqual(f.arguments, {
      title: 'Budget review',
      start: '2026-06-16T15:00',
      duration_minutes: 45,
      attendees: ['ann@x.io', 'bo@y.org'],
      room: 'aurora',
    });
    assert.deepEqual(f.missing, []);
  });

  test('"please" and "kindly" are no words of a request; "thanks" and "hello" still are, an action or a value', () => {
    assert.deepEqual(intentWords('Please kindly cancel my order, pls'), ['cancel', 'order']);
    assert.deepEqual(intentWords('thank the donor, say hello'), ['thank', 'donor', 'sai', 'hello']);
    const { tools: greet } = parseDomainSchema(
      {
        tools: {
          greet: {
            description: 'Greet a visitor',
            input: { words: { type: 'enum', values: ['hello', 'goodbye'] } },
            sideEffect: 'writes_local',
            executor: { kind: 'script', path: 't.mjs', export: 'g' },
          },
        },
      },
      '/tmp/greet.pkl',
    );
    assert.deepEqual(fillArguments(greet.greet!, 'greet them with hello please').arguments, { words: 'hello' });
    assert.equal(negatesAction("don't thank them", 'thank_donor'), true);
  });

  test('what is not said is missing, not guessed; a name the agent knows fills a field that takes its id', () => {
    assert.deepEqual(fillArguments(tools.schedule!, 'set up a meeting', { now: NOW }).missing, [
      'title',
      'start',
      'duration_minutes',
      'attendees',
    ]);
    const f = fillArguments(tools.give!, 'have the smith give me three arrows', {
      known: [{ id: 'bram_smith', names: ['Bram', 'the smith'] }],
    });
    assert.deepEqual(f.arguments, { npc: 'bram_smith', quantity: 3 });
  });
});
