import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ChatStandIn, completion } from '../../helpers/chat-stand-in.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

type Hit = { content: string; tags: string[] };

/** The idempotency key of a job's first call of a tool. */
const key = (skill: string, job: string) => `job:support/${skill}/${job}#1`;

/**
 * How a job is worked besides plain words: by the agent's `[llm.reasoning]` model calling its
 * tools as the job (a local chat-completions stand-in plays the model), and by an application's
 * behaviour module that has its own `work`. A stop in the middle of a job hands it back.
 * Real nats-server, real agents under pm2, a refund service that honours Idempotency-Key.
 */
describe("jobs worked by a model and by an application's work()", () => {
  let tf: TestFleet;
  let model: ChatStandIn;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-work-'));
  /** The refunds the service made, by idempotency key, and every request it got. */
  const refunded = new Map<string, string>();
  const requests: Array<{ key: string; order: string }> = [];
  let onRequest: (key: string) => void = () => undefined;
  const held: ServerResponse[] = [];
  let holdOrder = '';
  const service = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const k = String(req.headers['idempotency-key'] ?? '');
      const order = /\/orders\/([^/]+)\//.exec(req.url ?? '')?.[1] ?? '';
      requests.push({ key: k, order });
      onRequest(k);
      if (order === holdOrder) return void held.push(res);
      if (!refunded.has(k)) refunded.set(k, order);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ order, status: 'refunded' }));
    });
  });

  before(async () => {
    model = await ChatStandIn.start();
    // The model: calls refund_order for the order the job names, then says how the job ended.
    model.answer = (chat, res) => {
      const user = chat.messages.find((m) => m.role === 'user')?.content ?? '';
      const order = /ORD-\d{5}/.exec(user)?.[0];
      const called = chat.messages.some((m) => m.role === 'tool');
      if (/nothing to refund/.test(user))
        return completion(res, JSON.stringify({ status: 'give_up', summary: 'no order is named: nothing to refund' }));
      if (chat.tools && chat.tool_choice === 'auto' && !called) {
        const args = { order_id: order, amount: 20, reason: 'charged twice' };
        return completion(res, '', {
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'refund_order', arguments: JSON.stringify(args) } }],
        });
      }
      const status = /try again once/.test(user) && !/delivery 2/.test(user) ? 'retry' : 'done';
      return completion(res, JSON.stringify({ status, summary: `refunded ${order}` }));
    };
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    const port = (service.address() as AddressInfo).port;
    writeFileSync(
      join(dir, 'behavior.mjs'),
      `export function createBehavior({ id }) {
  // Only what it changes: no talk() (the agents talk as the default does), work() for the clerk.
  const behavior = {};
  if (id !== 'clerk') return behavior;
  behavior.work = async (ctx, request) => {
    const mode = request.job.payload.mode;
    if (mode === 'unsure') return { status: 'maybe' };
    if (mode === 'broken') throw new Error('the filing cabinet is stuck');
    if (mode === 'busy' && request.attempt === 1) return { status: 'retry', reason: 'the clerk is busy', code: 'CLERK_BUSY' };
    if (mode === 'refuse') return { status: 'give_up', reason: 'not the clerk\\'s business', code: 'NOT_MINE' };
    if (mode === 'twice') {
      const a = await request.call('refund_order', { order_id: 'ORD-40001', amount: 1, reason: 'the first part' });
      const b = await request.call('refund_order', { order_id: 'ORD-40001', amount: 2, reason: 'the second part' });
      return { status: 'done', note: [a.status, b.status].join(' ') };
    }
    if (mode === 'sleepy') await new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)));
    if (mode === 'default') return request.byDefault();
    const acted = await request.act('refund order ' + request.job.payload.order + ' of 5', 'the clerk files a refund');
    return acted.record?.status === 'ok' ? { status: 'done', note: 'filed on delivery ' + request.attempt } : { status: 'retry', reason: acted.answer.outcome };
  };
  return behavior;
}
`,
    );
    writeFileSync(
      join(dir, 'desk.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] { maxDeliver = 3; backoffMs { 100; 200 } } ["slow"] { maxDeliver = 1; maxWorkMs = 1500 } }
agents {
  ["desk"] { persona { name = "Desk" }; skills { "refunds" }; queues { "support" }; capabilities { "refund_order" } }
  ["clerk"] { persona { name = "Clerk" }; skills { "records" }; queues { "support"; "slow" }; capabilities { "refund_order" } }
}
tools {
  ["refund_order"] {
    description = "Refund an amount of an order to the customer"
    examples { "refund order ORD-12345 of 20"; "give the customer back 5 for ORD-10000" }
    input { ["order_id"] { pattern = #"ORD-[0-9]{5}"#; description = "The order" } ["amount"] { type = "number"; description = "How much to refund" } }
    sideEffect = "writes_external"
    executor = new Http { method = "POST"; url = "http://127.0.0.1:${port}/orders/{order_id}/refund" }
  }
}
`,
    );
    tf = await startTestFleet(
      [
        '[lifecycle]',
        'min_dwell_ms = 0',
        '[llm.reasoning]',
        'provider = "openai-compatible"',
        `base_url = "${model.baseUrl}"`,
        'model = "stand-in-1"',
        'timeout_ms = 20000',
      ],
      { schema: join(dir, 'desk.pkl'), agent: [`behavior = ${JSON.stringify(join(dir, 'behavior.mjs'))}`] },
    );
    await Promise.all([tf.fleet.start('desk'), tf.fleet.start('clerk')]);
  });
  after(async () => {
    for (const res of held) res.destroy();
    service.closeAllConnections();
    await new Promise((resolve) => service.close(resolve));
    await tf?.dispose();
    await model?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const settled = async (skill: string) => {
    const b = (await tf.fleet.jobs.list('support')).find((r) => r.skill === skill)!;
    return b.waiting === 0 && b.in_progress === 0 ? true : undefined;
  };
  const recall = async (id: string, query: string): Promise<Hit[]> => {
    const agent = await tf.fleet.agent(id);
    const out = (await agent.callTool({ name: 'recall', arguments: { query, tags: ['job'] } })) as {
      structuredContent?: { results: Hit[] };
    };
    return out.structuredContent?.results ?? [];
  };
  const letter = (id: string) => async () =>
    (await tf.fleet.jobs.dead({ queue: 'support' })).find((l) => (l.job as { id?: string }).id === id);

  test("with a model, the job is worked by its tool calls, made as the job under the job's id, acknowledged, and remembered", async () => {
    await tf.fleet.jobs.publish('support', 'refunds', { text: 'ORD-10001 was charged twice' }, { id: 'J-m1' });
    await eventually(() => (refunded.has(key('refunds', 'J-m1')) ? true : undefined), 30_000, 'the refund');
    await eventually(() => settled('refunds'), 30_000, 'the job acknowledged');
    assert.deepEqual(
      requests.filter((r) => r.key === key('refunds', 'J-m1')),
      [{ key: key('refunds', 'J-m1'), order: 'ORD-10001' }],
    );
    const asked = model.exchanges.find((e) => e.request.messages.some((m) => m.content?.includes('J-m1')))!;
    assert.deepEqual(
      asked.request.tools?.map((t) => t.function.name),
      ['refund_order'],
      'offered its granted tools',
    );
    assert.match(asked.request.messages[0]!.content!, /"support" queue.*skill "refunds"/);
    const hits = await eventually(
      async () => ((await recall('desk', 'ORD-10001')).find((h) => h.content.includes('J-m1')) ? recall('desk', 'ORD-10001') : undefined),
      20_000,
      'the job remembered',
    );
    const memory = hits.find((h) => h.content.includes('J-m1'))!;
    assert.match(memory.content, /→ done: refunded ORD-10001 \[refund_order ok\]/);
    assert.ok(memory.tags.includes('refund_order') && memory.tags.includes('done'), memory.tags.join(','));
    const answer = await tf.fleet.talk('desk', 'Hello there', { speaker: 'visitor' });
    assert.ok(answer.reply.length > 0, 'a module without talk() talks as the default does');
  });

  test('a job the model sends back is delivered again; its refund, made again under the same key, is answered from the first and made once', async () => {
    await tf.fleet.jobs.publish('support', 'refunds', { text: 'ORD-10002 twice charged; try again once' }, { id: 'J-m2' });
    await eventually(
      async () =>
        (await recall('desk', 'ORD-10002')).some((h) => /J-m2 \(support\/refunds, delivery 2\).*→ done/.test(h.content)) ? true : undefined,
      30_000,
      'the second delivery done',
    );
    await eventually(() => settled('refunds'), 30_000, 'the job acknowledged');
    assert.equal(
      requests.filter((r) => r.key === key('refunds', 'J-m2')).length,
      1,
      "the second call is answered from the agent's record: the service is asked once",
    );
    const seconds = model.exchanges.filter((e) =>
      e.request.messages.some((m) => m.role === 'tool' && m.content?.includes('"replayed":true')),
    );
    assert.ok(seconds.length >= 1, 'the model is told the call was replayed');
  });

  test('the model gives a job up: a dead letter at once, coded JOB_REFUSED, with its summary', async () => {
    await tf.fleet.jobs.publish('support', 'refunds', { text: 'hello, there is nothing to refund' }, { id: 'J-m3' });
    const dead = await eventually(letter('J-m3'), 30_000, 'the dead letter');
    assert.deepEqual([dead.reason.code, dead.attempts, dead.agent], ['JOB_REFUSED', 1, 'desk']);
    assert.match(dead.reason.message, /nothing to refund \[no call\]/);
  });

  test("an application's work(): retry, then done through request.act under the job's id; give_up, a throw and a result that is no result each end as it says", async () => {
    await tf.fleet.jobs.publish('support', 'records', { mode: 'busy', order: 'ORD-20001' }, { id: 'J-c1' });
    await tf.fleet.jobs.publish('support', 'records', { mode: 'refuse' }, { id: 'J-c2' });
    await tf.fleet.jobs.publish('support', 'records', { mode: 'broken' }, { id: 'J-c3' });
    await tf.fleet.jobs.publish('support', 'records', { mode: 'unsure' }, { id: 'J-c4' });
    await eventually(() => (refunded.get(key('records', 'J-c1')) === 'ORD-20001' ? true : undefined), 30_000, "the clerk's refund");
    const refused = await eventually(letter('J-c2'), 30_000, 'J-c2 given up');
    assert.deepEqual([refused.reason.code, refused.reason.message, refused.attempts], ['NOT_MINE', "not the clerk's business", 1]);
    const broken = await eventually(letter('J-c3'), 30_000, 'J-c3 given up after its deliveries');
    assert.deepEqual([broken.reason.code, broken.attempts], ['INTERNAL', 3]);
    assert.match(broken.reason.message, /filing cabinet is stuck/);
    const unsure = await eventually(letter('J-c4'), 30_000, 'J-c4 given up');
    assert.equal(unsure.reason.code, 'INVALID_REPLY');
    assert.match(unsure.reason.message, /work\(\) of clerk returned .*status/);
    await eventually(() => settled('records'), 30_000, 'the records queue empty');
    const hits = await recall('clerk', 'ORD-20001');
    assert.ok(
      hits.some((h) => /J-c1 \(support\/records, delivery 2\).*→ done: filed on delivery 2/.test(h.content)),
      JSON.stringify(hits.map((h) => h.content)),
    );
  });

  test('work(): two calls of one tool are two keys of the job; byDefault() works it as the agent would (here, its model); past maxWorkMs its signal is aborted and the job given up', async () => {
    await tf.fleet.jobs.publish('support', 'records', { mode: 'twice' }, { id: 'J-c5' });
    await tf.fleet.jobs.publish('support', 'records', { mode: 'default', text: 'refund ORD-50005, charged twice' }, { id: 'J-c6' });
    await tf.fleet.jobs.publish('slow', 'records', { mode: 'sleepy' }, { id: 'J-c7' });
    await eventually(() => (refunded.has('job:support/records/J-c5#2') ? true : undefined), 30_000, 'both parts refunded');
    assert.deepEqual([refunded.get('job:support/records/J-c5#1'), refunded.get('job:support/records/J-c5#2')], ['ORD-40001', 'ORD-40001']);
    await eventually(
      () => (refunded.get(key('records', 'J-c6')) === 'ORD-50005' ? true : undefined),
      30_000,
      "the model's refund, by default",
    );
    const sleepy = await eventually(
      async () => (await tf.fleet.jobs.dead({ queue: 'slow' })).find((l) => (l.job as { id?: string }).id === 'J-c7'),
      30_000,
      'J-c7 past maxWorkMs',
    );
    assert.equal(sleepy.reason.code, 'TIMEOUT');
    assert.match(sleepy.reason.message, /maxWorkMs \(1500 ms\)/);
  });

  test('an agent stopped in the middle of a job hands it back at once; started again, it finishes it, and the refund exists once', async () => {
    holdOrder = 'ORD-30003';
    const reached = new Promise<string>((resolve) => (onRequest = (k) => k === key('refunds', 'J-stop') && resolve(k)));
    await tf.fleet.jobs.publish('support', 'refunds', { text: 'refund ORD-30003, charged twice' }, { id: 'J-stop' });
    await reached;
    await tf.fleet.stop('desk');
    const backlog = (await tf.fleet.jobs.list('support')).find((r) => r.skill === 'refunds')!;
    assert.equal(backlog.waiting + backlog.in_progress, 1, 'still on its queue');
    assert.equal(await letter('J-stop')(), undefined);
    holdOrder = '';
    await tf.fleet.start('desk');
    // Within 30 s of the start: handed back, not left until the queue's ackWaitMs (60 s) gave it out again.
    await eventually(() => (refunded.has(key('refunds', 'J-stop')) ? true : undefined), 30_000, 'the refund made on the next delivery');
    await eventually(() => settled('refunds'), 30_000, 'the job acknowledged');
    assert.deepEqual(
      [...refunded.entries()].filter(([, o]) => o === 'ORD-30003'),
      [[key('refunds', 'J-stop'), 'ORD-30003']],
      "one refund, under the job's id",
    );
  });
});
