import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstream, type JetStreamManager } from '@nats-io/jetstream';

import { EventsSettingsSchema } from '../../../shared/config/fleet-settings.js';
import { ensureAgentConsumer, ensureEventStream } from '../../../shared/nats/event-stream.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

const NS_PER_S = 1_000_000_000;
const MIB = 1_048_576;

/**
 * `[events] max_age_s` and `max_bytes` bound every stream the fleet keeps: the events, the routed
 * copies (one per hearer, so they multiply) and the inboxes. What each costs a user: past them,
 * the oldest go first, and a Dormant agent no longer replays them.
 */
describe('the [events] limits of the fleet’s streams', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    nc = await connectNats({ servers: nats.url, name: 'test-limits' });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  async function limitsOf(
    jsm: JetStreamManager,
    names: FleetNames,
  ): Promise<{ stream: string; max_age_s: number; max_bytes: number; duplicate_window_s: number }[]> {
    return Promise.all(
      [names.eventStream, names.heardStream, names.inboxStream].map(async (stream) => {
        const c = (await jsm.streams.info(stream)).config;
        return { stream, max_age_s: c.max_age / NS_PER_S, max_bytes: c.max_bytes, duplicate_window_s: c.duplicate_window / NS_PER_S };
      }),
    );
  }

  test('each stream is created with them, and an existing one is brought in line when they change', async () => {
    const names = new FleetNames('limits');
    const first = EventsSettingsSchema.parse({ max_age_s: 3600, max_bytes: 8 * MIB, duplicate_window_s: 60 });
    const jsm = await ensureEventStream(nc, first, names);
    for (const s of await limitsOf(jsm, names))
      assert.deepEqual(s, { stream: s.stream, max_age_s: 3600, max_bytes: 8 * MIB, duplicate_window_s: 60 });

    const changed = EventsSettingsSchema.parse({ max_age_s: 7200, max_bytes: 16 * MIB, duplicate_window_s: 30 });
    await ensureEventStream(nc, changed, names);
    for (const s of await limitsOf(jsm, names))
      assert.deepEqual(s, { stream: s.stream, max_age_s: 7200, max_bytes: 16 * MIB, duplicate_window_s: 30 });
  });

  test('copies past max_bytes push out the oldest: a Dormant agent keeps the newest it heard', async () => {
    const names = new FleetNames('full');
    const settings = EventsSettingsSchema.parse({ max_bytes: MIB });
    const jsm = await ensureEventStream(nc, settings, names);
    // A registered agent that sleeps: its consumer retains what is routed to it.
    await ensureAgentConsumer(jsm, 'ada', settings, names);
    const js = jetstream(nc);
    const body = 'x'.repeat(16 * 1024);
    const copies = 3 * 64; // 3 MiB of copies into a 1 MiB stream
    for (let i = 0; i < copies; i++) await js.publish(names.agentHeard('ada'), `${i}:${body}`, { msgID: `e${i}:ada` });

    const info = await jsm.streams.info(names.heardStream);
    assert.ok(info.state.bytes <= MIB, `the heard stream holds ${info.state.bytes} bytes, over its ${MIB}`);
    assert.ok(info.state.messages > 0 && info.state.messages < copies, `kept ${info.state.messages} of ${copies}`);
    assert.equal(info.state.last_seq, copies);
    const consumer = await jsm.consumers.info(names.heardStream, names.heardConsumer('ada'));
    assert.equal(consumer.num_pending, info.state.messages, 'the sleeping agent would replay what the stream kept');
    // What it kept is the newest, unbroken up to the last copy.
    const oldest = await jsm.streams.getMessage(names.heardStream, { seq: info.state.first_seq });
    assert.ok(oldest, `no copy at seq ${info.state.first_seq}`);
    const first = Number(oldest.string().split(':')[0]);
    assert.equal(first, copies - info.state.messages);
  });

  test('copies older than max_age_s leave the heard stream, acknowledged or not', async () => {
    const names = new FleetNames('aged');
    const settings = EventsSettingsSchema.parse({ max_age_s: 1, duplicate_window_s: 1 });
    const jsm = await ensureEventStream(nc, settings, names);
    await ensureAgentConsumer(jsm, 'ada', settings, names);
    const js = jetstream(nc);
    for (let i = 0; i < 5; i++) await js.publish(names.agentHeard('ada'), `copy ${i}`, { msgID: `e${i}:ada` });
    assert.equal((await jsm.streams.info(names.heardStream)).state.messages, 5);
    await eventually(
      async () => ((await jsm.streams.info(names.heardStream)).state.messages === 0 ? true : undefined),
      20_000,
      'the copies to age out',
    );
    assert.equal((await jsm.consumers.info(names.heardStream, names.heardConsumer('ada'))).num_pending, 0);
  });
});
