import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/**
 * At least once, side effects once: an agent killed with SIGKILL in the middle of a job's call
 * (the service has the request, the agent has not recorded it) never acknowledged the job, so it
 * is delivered again once pm2 has restarted the agent, and the call runs again under the same
 * idempotency key, which the service honours (the tool says so: `keyHonoured`). The supervisor killed while jobs flow loses none:
 * agents pull their work from JetStream, not through it.
 */
describe('jobs through crashes', () => {
  let tf: TestFleet;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-desk-'));
  /** The service's side effects, by idempotency key, and every request it got. */
  const cancelled = new Map<string, string>();
  const requests: Array<{ key: string; order: string }> = [];
  let onRequest: (key: string) => void = () => undefined;
  const held: ServerResponse[] = [];
  const service = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const key = String(req.headers['idempotency-key'] ?? '');
      const order = /\/orders\/([^/]+)\/cancel/.exec(req.url ?? '')?.[1] ?? '';
      requests.push({ key, order });
      const first = !cancelled.has(key);
      if (first) cancelled.set(key, order);
      onRequest(key);
      // The first request of a key is held: its caller is killed before it hears back.
      if (first && (order === 'ORD-11111' || order === 'ORD-99999')) return void held.push(res);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ order, status: 'cancelled' }));
    });
  });

  before(async () => {
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    const port = (service.address() as AddressInfo).port;
    writeFileSync(
      join(dir, 'desk.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] { maxDeliver = 5; ackWaitMs = 2000; backoffMs { 100 } } ["fragile"] { maxDeliver = 1; ackWaitMs = 2000 } }
agents { ["desk"] { persona { name = "Desk" }; skills { "orders" }; capabilities { "cancel_order" } } }
tools {
  ["cancel_order"] {
    description = "Cancel an order that has not shipped yet"
    examples { "please cancel ORD-48213"; "cancel my order ORD-30941 before it ships" }
    input { ["order_id"] { pattern = #"ORD-[0-9]{5}"#; description = "The order to cancel" } }
    sideEffect = "writes_external"
    keyHonoured = true
    executor = new Http { method = "POST"; url = "http://127.0.0.1:${port}/orders/{order_id}/cancel" }
  }
}
`,
    );
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0'], { schema: join(dir, 'desk.pkl') });
    await tf.fleet.start('desk');
  });
  after(async () => {
    for (const res of held) res.destroy();
    service.closeAllConnections();
    await new Promise((resolve) => service.close(resolve));
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const backlogEmpty = async () => {
    const b = (await tf.fleet.jobs.list('support')).find((r) => r.skill === 'orders')!;
    return b.waiting === 0 && b.in_progress === 0 ? true : undefined;
  };

  test('kill -9 of the agent between the call and the acknowledgement: the job is delivered again, finished once, and the side effect exists once', async () => {
    const pidBefore = (await tf.fleet.status()).agents.find((a) => a.id === 'desk')!.pid!;
    const reached = new Promise<string>((resolve) => (onRequest = resolve));
    await tf.fleet.jobs.publish('support', 'orders', { text: 'Please cancel ORD-11111' }, { id: 'J-crash' });
    const key = await reached;
    assert.equal(key, 'job:support/orders/J-crash#1', "the job's key for its first call of the tool");
    process.kill(pidBefore, 'SIGKILL');
    await eventually(
      async () => {
        const row = (await tf.fleet.status()).agents.find((a) => a.id === 'desk')!;
        return row.pid !== pidBefore && row.state === 'active' ? true : undefined;
      },
      60_000,
      'pm2 to restart the agent',
    );
    await eventually(
      () => (requests.filter((r) => r.key === key).length >= 2 ? true : undefined),
      60_000,
      'the job delivered again and its call made again',
    );
    await eventually(backlogEmpty, 30_000, 'the job to be acknowledged');
    assert.equal([...cancelled.values()].filter((o) => o === 'ORD-11111').length, 1, 'cancelled once');
    assert.ok(requests.filter((r) => r.key === key).every((r) => r.order === 'ORD-11111'));
  });

  test("kill -9 of the agent on a job's last delivery: the supervisor catches it from the advisory and makes it a dead letter; the call runs again by itself", async () => {
    const pidBefore = (await tf.fleet.status()).agents.find((a) => a.id === 'desk')!.pid!;
    const reached = new Promise<string>((resolve) => (onRequest = resolve));
    await tf.fleet.jobs.publish('fragile', 'orders', { text: 'Please cancel ORD-99999' }, { id: 'J-last' });
    assert.equal(await reached, 'job:fragile/orders/J-last#1');
    process.kill(pidBefore, 'SIGKILL');
    const letter = await eventually(
      async () => (await tf.fleet.jobs.dead({ queue: 'fragile' })).find((l) => (l.job as { id?: string }).id === 'J-last'),
      60_000,
      'the dead letter',
    );
    assert.deepEqual([letter.agent, letter.attempts, letter.reason.code, letter.skill], ['supervisor', 1, 'TIMEOUT', 'orders']);
    await eventually(
      async () => {
        const b = (await tf.fleet.jobs.list('fragile')).find((r) => r.skill === 'orders')!;
        return b.waiting + b.in_progress === 0 ? true : undefined;
      },
      30_000,
      'the job gone from its queue',
    );
    // The job is not delivered again; its call, cut off, runs again by itself once (the service honours its key).
    await eventually(
      () => (requests.filter((r) => r.key === 'job:fragile/orders/J-last#1').length === 2 ? true : undefined),
      60_000,
      'the call run again by itself',
    );
    assert.equal([...cancelled.values()].filter((o) => o === 'ORD-99999').length, 1, 'cancelled once');
    await eventually(
      async () => ((await tf.fleet.status()).agents.find((a) => a.id === 'desk')!.state === 'active' ? true : undefined),
      60_000,
      'desk back',
    );
  });

  test('kill -9 of the supervisor while jobs flow: every job is done, none twice', async () => {
    onRequest = () => undefined;
    const supervisor = (await tf.fleet.status()).supervisor.pid;
    const orders = Array.from({ length: 12 }, (_, i) => `ORD-2${String(i).padStart(4, '0')}`);
    for (const [i, order] of orders.entries()) {
      await tf.fleet.jobs.publish('support', 'orders', { text: `Please cancel ${order}` }, { id: `J-${order}` });
      if (i === 3) process.kill(supervisor, 'SIGKILL');
    }
    await eventually(() => (orders.every((o) => [...cancelled.values()].includes(o)) ? true : undefined), 90_000, 'every order cancelled');
    for (const o of orders) assert.equal(requests.filter((r) => r.order === o).length, 1, `${o} called once`);
    await eventually(
      async () => ((await tf.fleet.status()).supervisor.pid !== supervisor ? true : undefined),
      60_000,
      'pm2 to restart the supervisor',
    );
    await eventually(backlogEmpty, 30_000, 'the queue empty');
  });
});
