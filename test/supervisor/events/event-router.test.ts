import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstreamManager } from '@nats-io/jetstream';
import type { Msg } from '@nats-io/transport-node';

import { EventsSettingsSchema } from '../../../shared/config/fleet-settings.js';
import { DomainSchemaSchema } from '../../../shared/domain/domain-schema.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { ensureEventStream, publishWorldEvent } from '../../../shared/nats/event-stream.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { type HeardHints, moreFollows, readHints } from '../../../shared/protocol/heard-hints.js';
import { EventRouter } from '../../../supervisor/events/event-router.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

const domain = DomainSchemaSchema.parse({
  agents: { ada: { persona: { name: 'Ada' } }, bo: { persona: { name: 'Bo' } } },
  eventFilters: [{ eventTags: ['news'] }],
});

describe('the event router’s hints', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    nc = await connectNats({ servers: nats.url, name: 'test-router' });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  /**
   * Routes `summaries` with `hints` and resolves with each hearer's copies, in the order they
   * were stored. `waiting`: the events are published while the router is stopped (a burst it finds).
   */
  async function route(
    fleet: string,
    hints: ((text: string) => Promise<HeardHints>) | undefined,
    summaries: string[],
    waiting = false,
  ): Promise<Map<string, Msg[]>> {
    const names = new FleetNames(fleet);
    const settings = EventsSettingsSchema.parse({});
    await ensureEventStream(nc, settings, names);
    const copies = new Map<string, Msg[]>([
      ['ada', []],
      ['bo', []],
    ]);
    const sub = nc.subscribe(names.allHeard, { max: summaries.length * 2 });
    const seen = (async () => {
      for await (const m of sub) copies.get(m.subject.split('.')[2]!)!.push(m);
    })();
    await nc.flush();
    const publish = async () => {
      for (const [i, summary] of summaries.entries())
        await publishWorldEvent(
          nc,
          { id: `e${i}`, type: 'town.news', tags: ['news'], source: 'test', ts: new Date().toISOString(), payload: { summary } } as never,
          names,
        );
    };
    const start = () =>
      EventRouter.start({
        nc,
        names,
        domain,
        settings,
        hearers: () => ['ada', 'bo'],
        locationOf: () => null,
        hints,
        logger: createLogger({ level: 'silent' }),
      });
    if (waiting) {
      // The router's consumer takes what is published once it exists: one that ran and stopped finds the burst waiting.
      await (await start()).close();
      await publish();
    }
    const router = await start();
    try {
      if (!waiting) await publish();
      await seen;
    } finally {
      await router.close();
    }
    return copies;
  }

  test('each copy carries the event’s concepts and vector, found once per event', async () => {
    const asked: string[] = [];
    const copies = await route(
      'hinta',
      async (text) => {
        asked.push(text);
        return { concepts: [{ name: 'Ada', type: 'person' }], vector: { model: 'm', values: Float32Array.of(0.6, 0.8) } };
      },
      ['Ada saw wolves', 'Bo baked bread'],
    );
    assert.deepEqual(asked, ['Ada saw wolves (town.news)', 'Bo baked bread (town.news)']);
    for (const id of ['ada', 'bo']) {
      const got = copies.get(id)!;
      assert.equal(got.length, 2);
      const hints = readHints(got[0]!.headers);
      assert.deepEqual(hints.concepts, [{ name: 'Ada', type: 'person' }]);
      assert.deepEqual(
        Array.from(hints.vector!.values).map((v) => Math.round(v * 10) / 10),
        [0.6, 0.8],
      );
    }
  });

  test('hints that fail or come late are left out; the copies still go, in the events’ order', async () => {
    let n = 0;
    const copies = await route(
      'hintb',
      (text) => {
        n++;
        // The first never answers, the second fails, the third answers at once.
        if (n === 1) return new Promise(() => undefined);
        if (n === 2) return Promise.reject(new Error('service down'));
        return Promise.resolve({ concepts: [{ name: text.slice(0, 5), type: 'person' }] });
      },
      ['first news', 'second news', 'third news'],
    );
    for (const id of ['ada', 'bo']) {
      const got = copies.get(id)!;
      assert.deepEqual(
        got.map((m) => (JSON.parse(m.string()) as { id: string }).id),
        ['e0', 'e1', 'e2'],
      );
      assert.deepEqual(readHints(got[0]!.headers), {});
      assert.deepEqual(readHints(got[1]!.headers), {});
      assert.deepEqual(readHints(got[2]!.headers).concepts, [{ name: 'third', type: 'person' }]);
    }
  });

  test('copies made while later events wait say more follow, the last of a burst and a lone event do not', async () => {
    const burst = await route('moreb', undefined, ['one', 'two', 'three', 'four'], true);
    for (const id of ['ada', 'bo'])
      assert.deepEqual(
        burst.get(id)!.map((m) => moreFollows(m.headers)),
        [true, true, true, false],
      );
    const lone = await route('morel', undefined, ['alone']);
    assert.deepEqual(
      lone.get('ada')!.map((m) => moreFollows(m.headers)),
      [false],
    );
  });
});

describe('an agent’s events', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    nc = await connectNats({ servers: nats.url, name: 'test-router-source' });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  test('come on the agent’s own subject and are routed only with it as their source', async () => {
    const names = new FleetNames('sourced');
    const settings = EventsSettingsSchema.parse({});
    const jsm = await jetstreamManager(nc);
    const event = (id: string, source: string) => ({
      id,
      type: 'town.news',
      tags: ['news'],
      mentions: [],
      source,
      ts: new Date().toISOString(),
      payload: { summary: id },
    });
    await ensureEventStream(nc, settings, names);
    const copies: string[] = [];
    const sub = nc.subscribe(names.agentHeard('bo'));
    const seen = (async () => {
      for await (const m of sub) if (copies.push(m.json<{ id: string }>().id) === 2) break;
    })();
    await nc.flush();
    const router = await EventRouter.start({
      nc,
      names,
      domain,
      settings,
      hearers: () => ['ada', 'bo'],
      locationOf: () => null,
      logger: createLogger({ level: 'silent' }),
    });
    try {
      await publishWorldEvent(nc, event('forged', 'bo'), names, 'ada');
      await publishWorldEvent(nc, event('own', 'ada'), names, 'ada');
      assert.equal((await jsm.streams.info(names.eventStream)).state.messages, 2);
      await publishWorldEvent(nc, event('after', 'game'), names);
      await seen;
    } finally {
      await router.close();
    }
    // In order, so the event that says bo published it on ada's subject was taken, and not routed.
    assert.deepEqual(copies, ['own', 'after']);
    assert.equal((await jsm.consumers.info(names.eventStream, names.routerConsumer)).config.filter_subject, undefined);
  });
});
