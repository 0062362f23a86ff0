import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstream, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';

import { QueueSchema } from '../../../shared/domain/queue-schema.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { ensureJobQueues, jobBacklog, publishJob } from '../../../shared/nats/job-queue.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { parseJob } from '../../../shared/protocol/job.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

/** Work queues on a real nats-server: a stream per queue, a consumer per skill, deduplicated publishing, the backlog. */
describe('work queues on JetStream', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const names = new FleetNames('desk');
  const support = QueueSchema.parse({ maxDeliver: 3, ackWaitMs: 2000 });

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    nc = await connect({ servers: nats.url });
    jsm = await jetstreamManager(nc);
    await ensureJobQueues(jsm, { support }, new Map([['support', ['billing', 'shipping']]]), names);
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  test("each queue is a work-queue stream, each skill that serves it a durable consumer with the queue's delivery settings", async () => {
    const stream = await jsm.streams.info('DESK_JOBS_SUPPORT');
    assert.equal(stream.config.retention, 'workqueue');
    assert.deepEqual(stream.config.subjects, ['desk.jobs.support.*']);
    const billing = await jsm.consumers.info('DESK_JOBS_SUPPORT', 'skill_billing');
    assert.equal(billing.config.filter_subject, 'desk.jobs.support.billing');
    assert.equal(billing.config.max_deliver, 3);
    assert.equal(billing.config.ack_wait, 2000 * 1_000_000);
    assert.equal((await jsm.streams.info('DESK_JOBS_DEAD')).config.subjects[0], 'desk.jobs.dead.*');
    // A fleet that declares no queue gets no job stream at all.
    const bare = new FleetNames('bare');
    await ensureJobQueues(jsm, {}, new Map(), bare);
    await assert.rejects(jsm.streams.info(bare.deadStream));
    // Settings that change are brought in line on the next start.
    await ensureJobQueues(jsm, { support: { ...support, maxDeliver: 7 } }, new Map([['support', ['billing']]]), names);
    assert.equal((await jsm.consumers.info('DESK_JOBS_SUPPORT', 'skill_billing')).config.max_deliver, 7);
  });

  test('a job published twice under one id is one job; a queue the fleet does not have is NOT_FOUND', async () => {
    const job = parseJob({ queue: 'support', skill: 'billing', payload: { ticket: 'T-1', text: 'charged twice' }, id: 'T-1' });
    const first = await publishJob(nc, job, names);
    const again = await publishJob(nc, { ...job, published_at: new Date().toISOString() }, names);
    assert.equal(first.duplicate, false);
    assert.equal(again.duplicate, true);
    assert.equal(again.seq, first.seq);
    await assert.rejects(
      publishJob(nc, parseJob({ queue: 'sales', skill: 'billing', payload: {} }), names),
      (err: unknown) => isThymosError(err, 'NOT_FOUND') && /no queue "sales"/.test(err.message),
    );
  });

  test('bad jobs are refused at the edge, naming the field', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ queue: 'support', skill: 'billing' }, /payload/],
      [{ queue: 'dead', skill: 'billing', payload: 1 }, /queue/],
      [{ queue: 'support', skill: 'bill.ing', payload: 1 }, /skill/],
      [{ queue: 'support', skill: 'billing', payload: 'x'.repeat(70_000) }, /payload.*65536 bytes/],
      [{ queue: 'support', skill: 'billing', payload: 1, id: 'a b' }, /id/],
      [{ queue: 'support', skill: 'billing', payload: 1, extra: true }, /extra/],
    ];
    for (const [raw, pattern] of cases)
      assert.throws(
        () => parseJob(raw),
        (err: unknown) => isThymosError(err, 'INVALID_INPUT') && pattern.test(err.message),
        JSON.stringify(raw).slice(0, 80),
      );
  });

  test("the backlog: what waits, what a worker holds, the oldest job's age, and skills nobody serves", async () => {
    await publishJob(nc, parseJob({ queue: 'support', skill: 'shipping', payload: { ticket: 'T-2' } }), names);
    await publishJob(nc, parseJob({ queue: 'support', skill: 'shipping', payload: { ticket: 'T-3' } }), names);
    await publishJob(nc, parseJob({ queue: 'support', skill: 'legal', payload: { ticket: 'T-4' } }), names);
    const consumer = await jetstream(nc).consumers.get('DESK_JOBS_SUPPORT', 'skill_shipping');
    const held = await consumer.next({ expires: 5000 });
    assert.ok(held, 'a worker takes one shipping job');
    const served = new Map([['support', ['billing', 'shipping']]]);
    const rows = await eventually(
      async () => {
        const r = await jobBacklog(jsm, ['support'], served, names);
        return r.find((x) => x.skill === 'shipping')?.in_progress === 1 ? r : undefined;
      },
      10_000,
      'the held job to show',
    );
    const bySkill = Object.fromEntries(rows.map((r) => [r.skill, r]));
    assert.deepEqual(
      { ...bySkill.shipping, oldest_ms: 0 },
      { queue: 'support', skill: 'shipping', waiting: 1, in_progress: 1, oldest_ms: 0, delivered: 1, served: true },
    );
    assert.ok(bySkill.shipping!.oldest_ms >= 0 && bySkill.shipping!.oldest_ms < 60_000);
    assert.equal(bySkill.billing!.waiting, 1);
    assert.equal(bySkill.billing!.delivered, 0, 'no billing job taken yet');
    assert.deepEqual(
      { ...bySkill.legal, oldest_ms: 0 },
      { queue: 'support', skill: 'legal', waiting: 1, in_progress: 0, oldest_ms: 0, delivered: 0, served: false },
    );
    held.ack();
    await eventually(
      async () =>
        (await jobBacklog(jsm, ['support'], served, names)).find((x) => x.skill === 'shipping')?.in_progress === 0 ? true : undefined,
      10_000,
      'the acknowledged job to be gone',
    );
    assert.deepEqual(await jobBacklog(jsm, ['nowhere'], served, names), []);
  });
});
