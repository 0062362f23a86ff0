import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { LifecycleState } from '../../../shared/domain/domain-schema.js';
import type { ThymosError } from '../../../shared/errors/errors.js';
import { runMoves, type ScheduledMove } from '../../../supervisor/reconcile/move-schedule.js';

const move = (id: string, from: LifecycleState, to: LifecycleState): ScheduledMove => ({ id, from, to });

/** Runs the moves with a `run` that settles when told, and records the order things happen in. */
function harness(outcome: (m: ScheduledMove) => boolean = () => true) {
  const events: string[] = [];
  const pending = new Map<string, () => void>();
  const refusals: Array<{ id: string; code: string }> = [];
  const finish = (id: string) => {
    pending.get(id)!();
    pending.delete(id);
  };
  const run = (m: ScheduledMove) =>
    new Promise<boolean>((resolve) => {
      events.push(`begin ${m.id}`);
      pending.set(m.id, () => {
        events.push(`end ${m.id}`);
        resolve(outcome(m));
      });
    });
  const refused = (m: ScheduledMove, err: ThymosError) => refusals.push({ id: m.id, code: err.code });
  return { events, pending, refusals, finish, run, refused };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('with places free, moves down wait until the moves up are done', async () => {
  const h = harness();
  const done = runMoves(
    [move('a', 'active', 'dormant'), move('b', 'dormant', 'active'), move('c', 'dormant', 'active')],
    { concurrency: 4, maxRunning: 4, maxActive: 4, running: 1, active: 1 },
    h.run,
    h.refused,
  );
  await tick();
  assert.deepEqual(h.events, ['begin b', 'begin c'], 'the wakes have the CPU to themselves');
  h.finish('b');
  await tick();
  assert.deepEqual(h.events.slice(2), ['end b'], 'one wake still runs');
  h.finish('c');
  await tick();
  assert.deepEqual(h.events.slice(3), ['end c', 'begin a']);
  h.finish('a');
  await done;
  assert.deepEqual(h.refusals, []);
});

test('a failed move up still lets the moves down run', async () => {
  const h = harness((m) => m.id !== 'b');
  const done = runMoves(
    [move('a', 'listening', 'dormant'), move('b', 'dormant', 'active')],
    { concurrency: 4, maxRunning: 4, maxActive: 4, running: 1, active: 0 },
    h.run,
    h.refused,
  );
  await tick();
  h.finish('b');
  await tick();
  assert.deepEqual(h.events, ['begin b', 'end b', 'begin a']);
  h.finish('a');
  await done;
});

test('at the running limit a move up waits for the place a move down gives back', async () => {
  const h = harness();
  const done = runMoves(
    [move('a', 'active', 'dormant'), move('b', 'listening', 'dormant'), move('c', 'dormant', 'active'), move('d', 'dormant', 'listening')],
    { concurrency: 4, maxRunning: 2, maxActive: 2, running: 2, active: 1 },
    h.run,
    h.refused,
  );
  await tick();
  assert.deepEqual(h.events, ['begin a', 'begin b']);
  h.finish('b');
  await tick();
  assert.deepEqual(h.events.slice(2), ['end b', 'begin c'], 'the first place freed goes to the first move up waiting');
  h.finish('a');
  await tick();
  assert.deepEqual(h.events.slice(4), ['end a', 'begin d']);
  h.finish('c');
  h.finish('d');
  await done;
  assert.deepEqual(h.refusals, []);
});

test('an upgrade to active waits for a downgrade at the active limit; moving between running states takes no running place', async () => {
  const h = harness();
  const done = runMoves(
    [move('a', 'active', 'listening'), move('b', 'listening', 'active')],
    { concurrency: 4, maxRunning: 2, maxActive: 1, running: 2, active: 1 },
    h.run,
    h.refused,
  );
  await tick();
  assert.deepEqual(h.events, ['begin a']);
  h.finish('a');
  await tick();
  assert.deepEqual(h.events, ['begin a', 'end a', 'begin b']);
  h.finish('b');
  await done;
});

test('a move down that fails frees nothing: the move up waiting for it is refused with CAPACITY_EXCEEDED', async () => {
  const h = harness((m) => m.id !== 'a');
  const done = runMoves(
    [move('a', 'active', 'dormant'), move('c', 'dormant', 'active')],
    { concurrency: 4, maxRunning: 1, maxActive: 1, running: 1, active: 1 },
    h.run,
    h.refused,
  );
  await tick();
  h.finish('a');
  await done;
  assert.deepEqual(h.events, ['begin a', 'end a']);
  assert.deepEqual(h.refusals, [{ id: 'c', code: 'CAPACITY_EXCEEDED' }]);
});

test('a move up that fails gives its place to the next one waiting', async () => {
  const h = harness((m) => m.id !== 'c');
  const done = runMoves(
    [move('c', 'dormant', 'active'), move('d', 'dormant', 'active'), move('a', 'active', 'dormant')],
    { concurrency: 4, maxRunning: 2, maxActive: 2, running: 1, active: 1 },
    h.run,
    h.refused,
  );
  await tick();
  assert.deepEqual(h.events, ['begin a', 'begin c']);
  h.finish('c');
  await tick();
  assert.deepEqual(h.events.slice(2), ['end c', 'begin d'], 'the failed start gave its place back before the stop finished');
  h.finish('a');
  h.finish('d');
  await done;
  assert.deepEqual(h.refusals, []);
});

test('each direction runs at most `concurrency` moves at once', async () => {
  const h = harness();
  const ups = ['u1', 'u2', 'u3'].map((id) => move(id, 'dormant', 'listening'));
  const done = runMoves(ups, { concurrency: 2, maxRunning: 10, maxActive: 10, running: 0, active: 0 }, h.run, h.refused);
  await tick();
  assert.deepEqual(h.events, ['begin u1', 'begin u2']);
  h.finish('u1');
  await tick();
  assert.deepEqual(h.events.slice(2), ['end u1', 'begin u3']);
  h.finish('u2');
  h.finish('u3');
  await done;
});

test('onUpsDone comes once the moves up are done, while moves down still run; the schedule settles only after them', async () => {
  const h = harness();
  let upsDone = false;
  let settled = false;
  const done = runMoves(
    [move('a', 'active', 'dormant'), move('b', 'dormant', 'active')],
    { concurrency: 4, maxRunning: 4, maxActive: 4, running: 1, active: 1 },
    h.run,
    h.refused,
    () => {
      upsDone = true;
      h.events.push('ups done');
    },
  ).then(() => (settled = true));
  await tick();
  assert.equal(upsDone, false, 'not while a wake runs');
  h.finish('b');
  await tick();
  assert.deepEqual(h.events, ['begin b', 'end b', 'ups done', 'begin a']);
  assert.equal(settled, false, 'the stop still runs');
  h.finish('a');
  await done;
  assert.equal(settled, true);
});

test('at the running limit onUpsDone waits for the moves down the wakes need; a refused wake counts as done', async () => {
  const h = harness((m) => m.id !== 'a');
  const order: string[] = [];
  const done = runMoves(
    [move('a', 'active', 'dormant'), move('b', 'active', 'dormant'), move('c', 'dormant', 'active'), move('d', 'dormant', 'active')],
    { concurrency: 4, maxRunning: 2, maxActive: 2, running: 2, active: 2 },
    h.run,
    (m, err) => {
      h.refused(m, err);
      order.push(`refused ${m.id}`);
    },
    () => order.push('ups done'),
  );
  await tick();
  h.finish('b');
  await tick();
  h.finish('c');
  await tick();
  assert.deepEqual(order, [], 'd still waits for the place a frees');
  h.finish('a');
  await done;
  assert.deepEqual(order, ['refused d', 'ups done'], 'a failed to stop: d is refused, then the wakes are done');
});
