import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { AckPolicy, type ConsumerMessages, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { createInbox, headers } from '@nats-io/transport-node';

import { readForever } from '../../../agent/links/durable-consumer.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { LONG_PULL } from '../../../shared/nats/long-pull.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

/** Waits, with a deadline, until `fn` holds. */
const until = (what: string, fn: () => boolean | Promise<boolean>) =>
  eventually(async () => ((await fn()) ? true : undefined), 10_000, what);

let nats: TestNatsServer;
let nc: NatsConnection;
/** What the tests read, closed at the end. */
const open: ConsumerMessages[] = [];

before(async () => {
  nats = await startNatsServer({ jetstream: true });
  nc = await connectNats({ servers: nats.url, name: 'test-consumer' });
});
after(async () => {
  for (const m of open) await m.close();
  await nc?.close();
  await nats?.stop();
});

describe('reading a durable consumer: a burst gathered into one batch', () => {
  /** A fresh stream and consumer read with `readForever`, gathering while a message's `More` header is "1", for up to `ms`. */
  async function reader(name: string, ms: number) {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name, subjects: [`${name}.>`] });
    await jsm.consumers.add(name, { durable_name: 'c', ack_policy: AckPolicy.Explicit });
    const batches: string[][] = [];
    const handle = async (msgs: JsMsg[]) => {
      batches.push(msgs.map((m) => m.string()));
      for (const m of msgs) m.ack();
    };
    const consumer = await jetstream(nc).consumers.get(name, 'c');
    open.push(
      await readForever(consumer, 256, handle, createLogger({ level: 'silent' }), 'test', {
        ms,
        more: (m) => m.headers?.get('More') === '1',
      }),
    );
    const js = jetstream(nc);
    const send = async (text: string, more: boolean) => {
      const h = headers();
      if (more) h.set('More', '1');
      await js.publish(`${name}.x`, text, { headers: h });
    };
    const ackPending = async () => (await jsm.consumers.info(name, 'c')).num_ack_pending;
    return { batches, send, ackPending };
  }

  test('messages that say more follow wait for the rest; the one that does not closes the batch', async () => {
    const r = await reader('burst', 60_000);
    await r.send('a', true);
    await until('the first message delivered', async () => (await r.ackPending()) === 1);
    await r.send('b', true);
    await until('the second message delivered', async () => (await r.ackPending()) === 2);
    assert.deepEqual(r.batches, [], 'a burst under way is not handled yet');
    await r.send('c', false);
    await until('the burst handled', () => r.batches.flat().length === 3);
    assert.deepEqual(r.batches, [['a', 'b', 'c']]);
  });

  test('a lone message waits for nothing; a burst that stops short is handled after the wait', async () => {
    const lone = await reader('lone', 60_000);
    await lone.send('d', false);
    await until('the lone message handled', () => lone.batches.length === 1);
    assert.deepEqual(lone.batches, [['d']]);

    const cut = await reader('cut', 50);
    await cut.send('e', true);
    await until('the cut-short burst handled', () => cut.batches.length === 1);
    assert.deepEqual(cut.batches, [['e']]);
    await cut.send('f', false);
    await until('the next message handled', () => cut.batches.length === 2);
    assert.deepEqual(cut.batches, [['e'], ['f']]);
  });
});

describe('reading a durable consumer: pulls the server no longer holds', () => {
  test('the fleet pulls with LONG_PULL: requests that live an hour, so they seldom expire as a message comes in', async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'timing', subjects: ['timing.>'] });
    await jsm.consumers.add('timing', { durable_name: 'c', ack_policy: AckPolicy.Explicit });
    const requests: Array<{ expires: number; idle_heartbeat: number }> = [];
    const sniff = nc.subscribe('$JS.API.CONSUMER.MSG.NEXT.timing.c', { callback: (_err, m) => void requests.push(m.json()) });
    try {
      open.push(
        await readForever(
          await jetstream(nc).consumers.get('timing', 'c'),
          256,
          async () => undefined,
          createLogger({ level: 'silent' }),
          'test',
        ),
      );
      await until('the first pull made', () => requests.length > 0);
      assert.deepEqual(
        { expires: requests[0]!.expires, idle_heartbeat: requests[0]!.idle_heartbeat },
        { expires: LONG_PULL.expires * 1e6, idle_heartbeat: LONG_PULL.idle_heartbeat * 1e6 },
      );
    } finally {
      sniff.unsubscribe();
    }
  });

  test('a pull the server refused or dropped is made again after two missed heartbeats, and the message then waiting is heard', async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'dropped', subjects: ['dropped.>'] });
    // One waiting pull at most: another client's holds the place, so the reader's is refused (409).
    await jsm.consumers.add('dropped', { durable_name: 'c', ack_policy: AckPolicy.Explicit, max_waiting: 1 });
    const inbox = createInbox();
    let otherEnded = false;
    const other = nc.subscribe(inbox, { callback: (_err, m) => void (otherEnded ||= m.headers?.code === 408) });
    nc.publish('$JS.API.CONSUMER.MSG.NEXT.dropped.c', JSON.stringify({ batch: 1, expires: 1500 * 1e6 }), { reply: inbox });
    await nc.flush();
    const handled: string[] = [];
    const handle = async (msgs: JsMsg[]) => {
      for (const m of msgs) {
        handled.push(m.string());
        m.ack();
      }
    };
    open.push(
      await readForever(
        await jetstream(nc).consumers.get('dropped', 'c'),
        256,
        handle,
        createLogger({ level: 'silent' }),
        'test',
        undefined,
        { expires: 60_000, idle_heartbeat: 500 },
      ),
    );
    // The other pull expires; the reader's client still counts on the pull it was refused.
    await until('the other pull expired', () => otherEnded);
    other.unsubscribe();
    await jetstream(nc).publish('dropped.x', 'waiting');
    // With the client's defaults (30 s pulls, 15 s heartbeats) this message waits 30 s or more.
    await until('the message heard once the reader pulled again', () => handled.length === 1);
    assert.deepEqual(handled, ['waiting']);
  });
});
