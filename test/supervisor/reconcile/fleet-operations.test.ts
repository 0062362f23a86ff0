import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FleetOperations } from '../../../supervisor/reconcile/operations.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A promise and what settles it, for an operation the test ends when it wants. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => undefined as void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

test('operations run one at a time; wakesDone settles once the running one has only moves down left, and waits for one queued behind it', async () => {
  const ops = new FleetOperations();
  const order: string[] = [];
  const firstStops = gate();
  const secondWakes = gate();
  let wakesDone = false;
  const first = ops.run(async () => {
    order.push('first begins');
    ops.upsDone();
    await firstStops.promise;
    order.push('first ends');
  });
  await tick();
  await ops.wakesDone();
  assert.deepEqual(order, ['first begins'], 'the first has only its stops left');
  const second = ops.run(async () => {
    order.push('second begins');
    await secondWakes.promise;
    ops.upsDone();
    order.push('second woke');
  });
  void ops.wakesDone().then(() => (wakesDone = true));
  await tick();
  assert.equal(wakesDone, false, 'the second waits to wake');
  firstStops.open();
  await first;
  await tick();
  assert.equal(wakesDone, false, 'the second is waking');
  assert.deepEqual(order, ['first begins', 'first ends', 'second begins']);
  secondWakes.open();
  await second;
  await tick();
  assert.equal(wakesDone, true);
  await ops.idle();
});

test('an operation that throws still lets wakesDone and the next operation go on', async () => {
  const ops = new FleetOperations();
  await assert.rejects(
    ops.run(() => Promise.reject(new Error('boom'))),
    /boom/,
  );
  await ops.wakesDone();
  assert.equal(await ops.run(async () => 7), 7);
});
