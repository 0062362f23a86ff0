import assert from 'node:assert/strict';
import { test } from 'node:test';

import { emptyReport } from '../../../supervisor/lifecycle/move-report.js';
import { LateMoves } from '../../../supervisor/reconcile/late-moves.js';
import { operationTarget } from '../../../supervisor/reconcile/operation-target.js';

test('late moves: who is still moving, and what they did handed over once, failures included', () => {
  const late = new LateMoves();
  assert.equal(late.take(), undefined);
  late.answered(['a', 'b']);
  assert.equal(late.moving('a'), true);
  late.ended('a');
  assert.equal(late.moving('a'), false);
  assert.equal(late.moving('b'), true);
  late.record(emptyReport());
  assert.equal(late.waiting(), undefined, 'nothing done, nothing to tell');
  late.record({ ...emptyReport(), stopped: ['a'] });
  late.record({ ...emptyReport(), failed: [{ id: 'b', code: 'SNAPSHOT_FAILED', message: 'not acknowledged' }] });
  assert.deepEqual(late.waiting(), { stopped: ['a'], failed: ['b'] });
  assert.deepEqual(late.take(), {
    stopped: ['a'],
    downgraded: [],
    archived: [],
    failed: [{ id: 'b', code: 'SNAPSHOT_FAILED', message: 'not acknowledged' }],
  });
  assert.equal(late.take(), undefined, 'told once');
});

test('a single-agent command is checked against its pin and the limits before it runs', () => {
  const entry = (id: string, state: 'active' | 'listening' | 'dormant' | 'archived') => ({
    id,
    state,
    mode: null,
    pid: null,
    port: null,
    score: null,
    source: null,
    since: 0,
    last_error: null,
  });
  const all = [entry('a', 'active'), entry('b', 'listening'), entry('c', 'dormant'), entry('d', 'archived')];
  const limits = { max_running: 2, max_active: 2 };
  const target = (
    op: Parameters<typeof operationTarget>[0],
    e: ReturnType<typeof entry>,
    extra: { mode?: 'active' | 'passive'; pinned?: 'dormant' } = {},
  ) => operationTarget(op, e, { mode: extra.mode, pinned: extra.pinned, all, lifecycle: limits });
  assert.equal(target('restore', all[3]!), 'dormant');
  assert.equal(target('restore', all[2]!), 'dormant', 'restoring one not archived leaves it');
  assert.equal(target('stop', all[0]!), 'dormant');
  assert.equal(target('start', all[1]!), 'active', 'listening → active takes no running place');
  assert.throws(() => target('start', all[2]!), /CAPACITY_EXCEEDED|max_running is 2/);
  assert.throws(() => target('start', all[0]!, { pinned: 'dormant' }), /pinned to dormant/);
  assert.equal(target('start', all[1]!, { mode: 'passive' }), 'listening');
});
