import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';

import { EventsSettingsSchema } from '../../../shared/config/fleet-settings.js';
import { ensureAgentConsumer, ensureEventStream } from '../../../shared/nats/event-stream.js';
import { movedMsgId, moveLegacyInboxes } from '../../../shared/nats/legacy-inbox.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { newMessage } from '../../../shared/protocol/agent-message.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

/**
 * Messages of an earlier version waited on `<fleet>.agent.<id>.inbox`, the sender only in the
 * payload. The supervisor moves what still waits there to today's `….inbox.<from>` when it
 * starts, so an upgrade loses none of them.
 */
describe('an inbox kept by an earlier version', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  const names = new FleetNames('upgraded');
  const settings = EventsSettingsSchema.parse({});

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    nc = await connectNats({ servers: nats.url, name: 'test-legacy-inbox' });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  test('what waits is moved onto its sender’s subject once, the old consumer goes, and the old subject takes nothing more', async () => {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    // The earlier version's inbox stream and ada's and cy's consumers on it.
    await jsm.streams.add({ name: names.inboxStream, subjects: [`${names.fleet}.agent.*.inbox`] });
    for (const id of ['ada', 'cy']) {
      await jsm.consumers.add(names.inboxStream, {
        durable_name: names.legacyInboxConsumer(id),
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.New,
        filter_subject: names.legacyInbox(id),
      });
    }
    const sent = ['Read already.', 'Meet me at the mill.', 'Bring the map.'].map((text) =>
      newMessage({ from: 'bob', to: 'ada', kind: 'tell', text }),
    );
    for (const m of sent) await js.publish(names.legacyInbox('ada'), JSON.stringify(m), { msgID: m.id });
    await js.publish(names.legacyInbox('ada'), 'not a message');
    // ada took the first before the upgrade.
    const legacy = await js.consumers.get(names.inboxStream, names.legacyInboxConsumer('ada'));
    const first = await legacy.next({ expires: 5000 });
    assert.equal(first?.json<{ text: string }>().text, 'Read already.');
    await first!.ackAck();
    await ensureEventStream(nc, settings, names);
    assert.deepEqual((await jsm.streams.info(names.inboxStream)).config.subjects, [names.allInboxes]);
    await ensureAgentConsumer(jsm, 'ada', settings, names);
    // A first move that crashed after copying one message, before deleting the old consumer.
    await js.publish(names.agentInbox('ada', 'bob'), JSON.stringify(sent[1]), { msgID: movedMsgId(sent[1]!.id) });
    const moves = await moveLegacyInboxes(jsm, settings, names);
    assert.deepEqual(
      moves.sort((a, b) => a.agent.localeCompare(b.agent)),
      [
        // One was stored by the crashed first move already; the text that is no message stays behind.
        { agent: 'ada', moved: 1, skipped: 1 },
        { agent: 'cy', moved: 0, skipped: 0 },
      ],
    );
    for (const id of ['ada', 'cy'])
      await assert.rejects(jsm.consumers.info(names.inboxStream, names.legacyInboxConsumer(id)), /consumer not found/);
    assert.deepEqual((await jsm.streams.info(names.inboxStream)).config.subjects, [names.allInboxes]);
    assert.deepEqual(await moveLegacyInboxes(jsm, settings, names), [], 'a second run finds nothing to move');
    // cy got today's consumer too.
    assert.equal((await jsm.consumers.info(names.inboxStream, names.inboxConsumer('cy'))).num_pending, 0);

    // The consumer the agent reads now holds the two it had not taken, once each, on bob's subject.
    const consumer = await js.consumers.get(names.inboxStream, names.inboxConsumer('ada'));
    assert.equal((await consumer.info()).num_pending, 2);
    const got: Array<[string, string]> = [];
    for await (const m of await consumer.fetch({ max_messages: 2, expires: 5000 })) got.push([m.subject, m.json<{ text: string }>().text]);
    assert.deepEqual(got, [
      [names.agentInbox('ada', 'bob'), 'Meet me at the mill.'],
      [names.agentInbox('ada', 'bob'), 'Bring the map.'],
    ]);
    await assert.rejects(js.publish(names.legacyInbox('ada'), 'late'), 'the old subject is no longer kept');
  });
});
