import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { AckPolicy, jetstream, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect, type Msg, type NatsConnection, type PermissionViolationError } from '@nats-io/transport-node';
import { z } from 'zod';

import { readFleetInfo } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { ErrorCode, isThymosError, ThymosError } from '../../../shared/errors/errors.js';
import { codedRequest } from '../../../shared/nats/coded-request.js';
import { type NatsIdentity, natsInboxPrefix } from '../../../shared/nats/nats-identity.js';
import { SupervisorRequester } from '../../../shared/nats/supervisor-requester.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { connectAs as connectAsIdentity, refusedOn as refusedOnly } from '../../helpers/nats-as.js';
import { startNatsServer } from '../../helpers/nats-server.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/**
 * What one agent, or two acting together, cannot forge with the fleet's own identities on a real
 * fleet: a max-deliveries advisory, a dead letter, a job given up that was never theirs, an answer
 * to someone else's request. JetStream delivers a pulled message to whatever reply subject the
 * pull names, so each receiver is tried with messages sent that way too.
 */
describe('forgeries on a worker fleet’s NATS', () => {
  let tf: TestFleet;
  let url: string;
  let data: string;
  let names: FleetNames;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  const open: NatsConnection[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'thymos-forge-'));

  before(async () => {
    writeFileSync(
      join(dir, 'desk.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] { maxDeliver = 2; ackWaitMs = 1000 } }
agents {
  ["billing_desk"] { persona { name = "Billing" }; skills { "billing" }; queues { "support" } }
  ["shipping_desk"] { persona { name = "Shipping" }; skills { "shipping" }; queues { "support" } }
}
`,
    );
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'pool_size = 0'], {
      schema: join(dir, 'desk.pkl'),
      refusals: 'expected',
    });
    const config = loadConfig(tf.ws.configPath);
    data = config.dataPath;
    url = readFleetInfo(config)!.nats_url;
    names = new FleetNames(config.fleet.name);
    admin = await connectAs('supervisor').then((c) => c.nc);
    jsm = await jetstreamManager(admin);
  });
  after(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const connectAs = (who: NatsIdentity) => connectAsIdentity(url, data, who, open);
  const refusedOn = (refused: PermissionViolationError[], subject: string) => refusedOnly(refused, 'publish', subject);

  /** Publishes `body` into `to`'s inbox as `from`, then `to` pulls its own inbox with `reply` as the pull's reply subject: JetStream delivers the message there. */
  async function redirect(from: NatsConnection, to: { id: string; nc: NatsConnection }, body: unknown, reply: string): Promise<void> {
    await jetstream(from).publish(names.agentInbox(to.id, 'shipping_desk'), JSON.stringify(body));
    to.nc.publish(
      `$JS.API.CONSUMER.MSG.NEXT.${names.inboxStream}.${names.inboxConsumer(to.id)}`,
      JSON.stringify({ batch: 1, expires: 2_000_000_000 }),
      { reply },
    );
  }

  const jobAt = (seq: number) => jsm.streams.getMessage(names.jobStream('support'), { seq }).catch(() => null);

  test('a forged max-deliveries advisory, delivered to the advisory subject by a pull, deletes no job; a real one dead-letters its job', async () => {
    const shipping = await connectAs('agent-shipping_desk');
    const billing = await connectAs('agent-billing_desk');
    // A job nobody has taken (a shipping one: the billing deliveries below do not touch it).
    const target = await tf.fleet.jobs.publish('support', 'shipping', { ticket: 'T-1' }, { id: 'T-1' });
    const advisorySubject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${names.jobStream('support')}.${names.skillConsumer('billing')}`;
    const seen: Msg[] = [];
    const watch = admin.subscribe(advisorySubject, { callback: (_e, m) => void seen.push(m) });
    const forged = {
      type: 'io.nats.jetstream.advisory.v1.max_deliver',
      stream: names.jobStream('support'),
      consumer: names.skillConsumer('billing'),
      stream_seq: target.seq,
      deliveries: 2,
    };
    await redirect(shipping.nc, { id: 'billing_desk', nc: billing.nc }, forged, advisorySubject);
    const delivered = await eventually(
      () => seen.find((m) => m.reply?.startsWith('$JS.ACK.')),
      10_000,
      'the forged advisory to reach the advisory subject',
    );
    assert.match(delivered.string(), /max_deliver/, 'nats-server let the pull aim the forged advisory there');
    // A job left to its last delivery unanswered: the advisory nats-server sends dead-letters it.
    const lost = await tf.fleet.jobs.publish('support', 'billing', { ticket: 'T-2' }, { id: 'T-2' });
    const consumer = await jetstream(admin).consumers.get(names.jobStream('support'), names.skillConsumer('billing'));
    for (let i = 0; i < 2; i++) {
      const m = await eventually(
        () => consumer.next({ expires: 5000 }).then((x) => (x?.seq === lost.seq ? x : undefined)),
        20_000,
        `delivery ${i + 1} of T-2`,
      );
      assert.equal(m.info.deliveryCount, i + 1);
    }
    // nats-server sees a delivery is past max_deliver when a pull asks for more: a worker still pulling.
    const letters = await eventually(
      async () => {
        await consumer.next({ expires: 1500 });
        const all = await tf.fleet.jobs.dead();
        return all.some((l) => (l.job as { id?: string }).id === 'T-2') ? all : undefined;
      },
      30_000,
      'the dead letter of T-2',
    );
    assert.equal(letters.find((l) => (l.job as { id?: string }).id === 'T-2')?.agent, 'supervisor');
    assert.ok(await jobAt(target.seq), 'T-1, never delivered, is still in the queue');
    assert.equal(letters.filter((l) => (l.job as { id?: string }).id === 'T-1').length, 0, 'and has no dead letter');
    watch.unsubscribe();
  });

  test('no identity but the supervisor may publish on $JS.EVENT.>', async () => {
    const subject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${names.jobStream('support')}.${names.skillConsumer('billing')}`;
    for (const who of ['agent-billing_desk', 'client', 'spare'] as const) {
      const { nc, refused } = await connectAs(who);
      nc.publish(subject, '{}');
      await refusedOn(refused, subject);
    }
  });

  test('only the supervisor writes dead letters: an agent gives up a job it works, delivered and unacknowledged, and the letter says who from the subject and what from the queue', async () => {
    const billing = await connectAs('agent-billing_desk');
    const shipping = await connectAs('agent-shipping_desk');
    billing.nc.publish(
      names.deadLetters('support'),
      JSON.stringify({
        job: { id: 'X' },
        queue: 'support',
        skill: 'billing',
        reason: { code: 'X', message: 'x' },
        attempts: 1,
        agent: 'supervisor',
        at: new Date().toISOString(),
      }),
    );
    await refusedOn(billing.refused, names.deadLetters('support'));
    const job = await tf.fleet.jobs.publish('support', 'billing', { ticket: 'T-3' }, { id: 'T-3' });
    const asBilling = SupervisorRequester.control(billing.nc, 10_000, names, 'billing_desk');
    const asShipping = SupervisorRequester.control(shipping.nc, 10_000, names, 'shipping_desk');
    const giveUp = {
      queue: 'support',
      skill: 'billing',
      seq: job.seq,
      attempts: 1,
      reason: { code: 'TOOL_FAILED', message: 'the desk is closed' },
    };
    await assert.rejects(
      asBilling.request('job_give_up', giveUp),
      (e: unknown) => isThymosError(e, ErrorCode.UNAUTHORIZED) && e.location?.path === 'seq' && /never delivered/.test(e.message),
    );
    await assert.rejects(
      asShipping.request('job_give_up', giveUp),
      (e: unknown) => isThymosError(e, ErrorCode.UNAUTHORIZED) && e.location?.path === 'queue',
    );
    // Named as a job of a skill shipping_desk works: not one, so refused too.
    await assert.rejects(asShipping.request('job_give_up', { ...giveUp, skill: 'shipping' }), (e: unknown) =>
      isThymosError(e, ErrorCode.UNAUTHORIZED),
    );
    // Delivered to billing_desk and not acknowledged: it may give it up.
    const consumer = await jetstream(billing.nc).consumers.get(names.jobStream('support'), names.skillConsumer('billing'));
    await eventually(
      () => consumer.next({ expires: 5000 }).then((x) => (x?.seq === job.seq ? x : undefined)),
      20_000,
      'T-3 delivered to billing_desk',
    );
    const given = await asBilling.request('job_give_up', giveUp);
    assert.equal(given.duplicate, false);
    await assert.rejects(
      asBilling.request('job_give_up', giveUp),
      (e: unknown) => isThymosError(e, ErrorCode.NOT_FOUND),
      'a second give-up finds the job gone',
    );
    const letter = (await tf.fleet.jobs.dead()).find((l) => l.seq === given.seq);
    assert.deepEqual(
      [letter?.agent, (letter?.job as { id?: string }).id, letter?.queue, letter?.skill, letter?.reason.message],
      ['billing_desk', 'T-3', 'support', 'billing', 'the desk is closed'],
    );
    assert.equal(await jobAt(job.seq), null, 'off the queue');
  });

  test('a dead letter forged by a pull aimed at the dead-letter subject is neither listed nor requeued', async () => {
    const shipping = await connectAs('agent-shipping_desk');
    const billing = await connectAs('agent-billing_desk');
    const before = (await jsm.streams.info(names.deadStream)).state.last_seq;
    const forged = {
      job: { id: 'F-1', queue: 'support', skill: 'shipping', payload: { refund: 1000 }, published_at: new Date().toISOString() },
      queue: 'support',
      skill: 'shipping',
      reason: { code: 'TIMEOUT', message: 'forged' },
      attempts: 2,
      agent: 'supervisor',
      at: new Date().toISOString(),
    };
    await redirect(shipping.nc, { id: 'billing_desk', nc: billing.nc }, forged, names.deadLetters('support'));
    const seq = await eventually(
      async () => {
        const last = (await jsm.streams.info(names.deadStream)).state.last_seq;
        return last > before ? last : undefined;
      },
      10_000,
      'the stream to keep what the pull aimed there',
    );
    assert.notEqual(
      (await jsm.streams.getMessage(names.deadStream, { seq }))?.subject,
      names.deadLetters('support'),
      'kept under its first subject',
    );
    assert.equal((await tf.fleet.jobs.dead()).filter((l) => l.seq === seq).length, 0, 'not listed');
    await assert.rejects(tf.fleet.jobs.requeue(seq), (e: unknown) => isThymosError(e, ErrorCode.NOT_FOUND));
  });

  test("nats-server's own answers to pulls aimed at a queue or at the dead letters are neither a job nor a dead letter, and the dead letters are bounded", async () => {
    const billing = await connectAs('agent-billing_desk');
    const last = async (stream: string) => (await jsm.streams.info(stream)).state.last_seq;
    /** billing_desk pulls its own skill's consumer, empty by now, naming `reply`: nats-server answers 404 there, and a stream keeps it. */
    const aim = async (stream: string, reply: string) => {
      const before = await last(stream);
      billing.nc.publish(
        `$JS.API.CONSUMER.MSG.NEXT.${names.jobStream('support')}.${names.skillConsumer('billing')}`,
        JSON.stringify({ batch: 1, no_wait: true }),
        { reply },
      );
      const seq = await eventually(
        async () => ((await last(stream)) > before ? last(stream) : undefined),
        10_000,
        `the answer kept in ${stream}`,
      );
      const kept = await jsm.streams.getMessage(stream, { seq });
      assert.equal(kept?.subject, reply, 'kept under the subject the pull named');
      return seq;
    };
    const dead = await aim(names.deadStream, names.deadLetters('support'));
    assert.equal((await tf.fleet.jobs.dead()).filter((l) => l.seq === dead).length, 0, 'not listed');
    const injected = await aim(names.jobStream('support'), names.job('support', 'shipping'));
    // A worker of that skill takes it: acknowledged and dropped, not given up as a job.
    await tf.fleet.start('shipping_desk');
    await eventually(async () => ((await jobAt(injected)) === null ? true : undefined), 30_000, 'the answer taken off the queue');
    const letters = await tf.fleet.jobs.dead({ queue: 'support' });
    assert.deepEqual(
      letters.filter((l) => typeof l.job !== 'object' || l.job === null),
      [],
      `no dead letter of what was no job: ${JSON.stringify(letters)}`,
    );
    const config = (await jsm.streams.info(names.deadStream)).config;
    assert.ok(
      config.max_msgs > 0 && config.max_bytes > 0,
      `the dead letters are bounded: ${config.max_msgs} letters, ${config.max_bytes} bytes`,
    );
  });

  test('an answer reaches a requester only from the identity it asked: agents answer only on inboxes that name them', async () => {
    const elder = await connectAs('agent-shipping_desk');
    const billing = await connectAs('agent-billing_desk');
    for (const subject of [
      '_INBOX.client.supervisor.x1',
      '_INBOX.client.x2',
      '_INBOX.agent-billing_desk.supervisor.x3',
      '_INBOX.agent-billing_desk.agent-other.x4',
      '_INBOX.supervisor.spare.x5',
    ]) {
      elder.nc.publish(subject, '{}');
      await refusedOn(elder.refused, subject);
    }
    // Where billing_desk asked shipping_desk, shipping_desk may answer.
    const mine = billing.nc.subscribe(`${natsInboxPrefix('agent-billing_desk')}.agent-shipping_desk.>`, { max: 1 });
    await billing.nc.flush();
    elder.nc.publish(`${natsInboxPrefix('agent-billing_desk')}.agent-shipping_desk.x6`, '{"ok":true}');
    for await (const m of mine) assert.equal(m.string(), '{"ok":true}');
  });
});

describe('a coded request', () => {
  test('takes no answer that came with a reply subject (a JetStream delivery aimed at its inbox), and asks on an inbox naming whom it asked', async () => {
    const server = await startNatsServer({ jetstream: true });
    const nc = await natsConnect({ servers: server.url, inboxPrefix: '_INBOX.me' });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'S', subjects: ['s.>'] });
      await jsm.consumers.add('S', { durable_name: 'c', ack_policy: AckPolicy.Explicit });
      await jetstream(nc).publish('s.1', '{"ok":true,"n":666}');
      const asked: string[] = [];
      // The forger pulls a message it may read, naming the requester's inbox as the pull's reply.
      nc.subscribe('svc.forged', {
        callback: (_e, m) =>
          void (asked.push(m.reply!), nc.publish('$JS.API.CONSUMER.MSG.NEXT.S.c', JSON.stringify({ batch: 1 }), { reply: m.reply! })),
      });
      nc.subscribe('svc.honest', { callback: (_e, m) => void (asked.push(m.reply!), m.respond('{"ok":true,"n":1}')) });
      const options = { timeoutMs: 5000, asked: 'agent-x' as const, unanswered: () => new ThymosError(ErrorCode.TIMEOUT, 'unanswered') };
      await assert.rejects(
        codedRequest(nc, 'svc.forged', {}, z.object({ n: z.number() }), options),
        (e: unknown) => isThymosError(e, ErrorCode.INVALID_REPLY) && /came with a reply subject/.test(e.message),
      );
      assert.deepEqual(await codedRequest(nc, 'svc.honest', {}, z.object({ n: z.number() }), options), { n: 1 });
      for (const reply of asked) assert.match(reply, /^_INBOX\.me\.agent-x\.[0-9a-f]{32}$/);
    } finally {
      await nc.close();
      await server.stop();
    }
  });
});
