import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AckPolicy, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

import { ownDelivery } from '../../../shared/nats/own-delivery.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer } from '../../helpers/nats-server.js';

test("a message another consumer delivered into a pull's inbox (a pull aimed there) is told apart from the pull's own", async () => {
  const server = await startNatsServer({ jetstream: true });
  const nc = await connect({ servers: server.url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'JOBS', subjects: ['jobs.>'] });
    await jsm.streams.add({ name: 'INBOX', subjects: ['inbox.>'] });
    await jsm.consumers.add('JOBS', { durable_name: 'skill_s', ack_policy: AckPolicy.Explicit, filter_subject: 'jobs.q.s' });
    await jsm.consumers.add('INBOX', { durable_name: 'inbox_b', ack_policy: AckPolicy.Explicit });
    const js = jetstream(nc);
    await js.publish('inbox.b.a', JSON.stringify({ id: 'forged', queue: 'q', skill: 's', payload: { evil: true } }));
    // The victim's pull: its inbox is seen on the pull request, as a forger that guessed it would know it.
    const pulls: string[] = [];
    const spy = nc.subscribe('$JS.API.CONSUMER.MSG.NEXT.JOBS.skill_s', { callback: (_e, m) => void (m.reply && pulls.push(m.reply)) });
    const victim = await (await js.consumers.get('JOBS', 'skill_s')).fetch({ max_messages: 2, expires: 10_000 });
    const got: JsMsg[] = [];
    const reading = (async () => {
      for await (const m of victim) {
        got.push(m);
        if (got.length === 2) break;
      }
    })();
    const inbox = await eventually(() => pulls[0], 10_000, 'the pull request');
    // The forger pulls its own inbox consumer, naming the victim's pull inbox as the reply.
    nc.publish('$JS.API.CONSUMER.MSG.NEXT.INBOX.inbox_b', JSON.stringify({ batch: 1 }), { reply: inbox });
    await js.publish('jobs.q.s', JSON.stringify({ id: 'real', queue: 'q', skill: 's', payload: {} }));
    await reading;
    spy.unsubscribe();
    const forged = got.find((m) => m.subject === 'inbox.b.a');
    const real = got.find((m) => m.subject === 'jobs.q.s');
    assert.ok(forged, "the forged message reached the victim's pull, as nats-server 2.9 allows");
    assert.ok(real);
    assert.equal(ownDelivery(forged, 'JOBS', 'skill_s', 'jobs.q.s'), false);
    assert.equal(ownDelivery(real, 'JOBS', 'skill_s', 'jobs.q.s'), true);
    assert.equal(
      ownDelivery(real, 'JOBS', 'skill_s', (s) => s.startsWith('jobs.q.')),
      true,
    );
    assert.equal(ownDelivery(real, 'JOBS', 'skill_other', 'jobs.q.s'), false);
  } finally {
    await nc.close();
    await server.stop();
  }
});
