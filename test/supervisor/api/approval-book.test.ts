import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Surreal } from 'surrealdb';

import { openEmbeddedSurreal } from '../../../shared/engines/embedded-surreal.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import type { ApprovalsCursor, PendingCall } from '../../../shared/protocol/pending-call.js';
import type { ApprovalDecision } from '../../../shared/protocol/tool-call.js';
import { ApprovalBook } from '../../../supervisor/api/approval-book.js';
import { eventually } from '../../helpers/fleet.js';

const logger = createLogger({ level: 'silent' });
let n = 0;
const pending = (extra: Partial<PendingCall> = {}): PendingCall => ({
  call_id: `call-${++n}`,
  agent: 'desk',
  tool: 'refund',
  arguments: { order_id: 'AB-1' },
  reason: 'broken',
  caller: 'game.ts#1@host',
  requested_at: new Date().toISOString(),
  expires_at: new Date(Date.now() + 60_000).toISOString(),
  ...extra,
});

describe("the supervisor's approval book", () => {
  let dir: string;
  let db: Surreal;
  const delivered: Array<{ agent: string; callId: string; decision: ApprovalDecision }> = [];
  const open = () =>
    ApprovalBook.open(
      db,
      async (agent, callId, decision) => void delivered.push({ agent, callId, decision }),
      { approvalTimeoutS: 60, maxPending: 3 },
      logger,
    );

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'thymos-approval-book-'));
    db = await openEmbeddedSurreal(join(dir, 'world'), { namespace: 'thymos', database: 'world', timeoutMs: 30_000 });
  });

  after(async () => {
    await db.close();
    // The engine may go on writing its last files for a while after close (surrealdb.js#592): removed once it has stopped.
    await eventually(
      () => {
        try {
          rmSync(dir, { recursive: true, force: true });
          return true;
        } catch {
          return undefined;
        }
      },
      60_000,
      'the database folder removed',
    );
  });

  test('two people deciding one call at once: one decision wins, the other is refused', async () => {
    const book = await open();
    const call = pending();
    await book.submit(call);
    const results = await Promise.allSettled([
      book.decide('desk', call.call_id, true, { who: 'client', said: 'alice#2@h' }, 'ok'),
      book.decide('desk', call.call_id, false, { who: 'client', said: 'bob#3@h' }, 'no'),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    assert.ok(isThymosError(lost.reason, 'INVALID_INPUT'), String(lost.reason));
    assert.equal(delivered.filter((d) => d.callId === call.call_id).length, 1);
    assert.deepEqual(
      await book.submit(call),
      delivered.find((d) => d.callId === call.call_id)!.decision,
      'handed in again, the call gets the same decision',
    );
  });

  test("the deadline is the supervisor's: at most approval_timeout_s from now, whatever the call says; past it the call is refused", async () => {
    const book = await open();
    const far = pending({ expires_at: '9999-01-01T00:00:00.000Z' });
    await book.submit(far);
    const kept = book.pending('desk').find((p) => p.call_id === far.call_id)!;
    assert.ok(Date.parse(kept.expires_at) <= Date.now() + 60_000);
    await book.sweep(Date.now() + 61_000);
    assert.ok(!book.pending('desk').some((p) => p.call_id === far.call_id));
    assert.equal(delivered.find((d) => d.callId === far.call_id)?.decision.approved, false);
    await assert.rejects(book.decide('desk', far.call_id, true, { who: 'client', said: 'alice#2@h' }, 'late'), (e: unknown) =>
      isThymosError(e, 'INVALID_INPUT'),
    );
  });

  test("own calls, other agents' calls and more than max_pending are refused; the book survives a restart", async () => {
    const book = await open();
    const clerk = () => pending({ agent: 'clerk' });
    const mine = clerk();
    await book.submit(mine);
    await assert.rejects(book.decide('clerk', mine.call_id, true, { who: 'client', said: 'game.ts#1@host' }, 'mine'), (e: unknown) =>
      isThymosError(e, 'TOOL_DENIED'),
    );
    await assert.rejects(book.decide('other', mine.call_id, true, { who: 'client', said: 'alice#2@h' }, 'x'), (e: unknown) =>
      isThymosError(e, 'NOT_FOUND'),
    );
    while (book.pending('clerk').length < 3) await book.submit(clerk());
    await assert.rejects(book.submit(clerk()), (e: unknown) => isThymosError(e, 'INVALID_INPUT') && /max_pending/.test(e.message));
    const reopened = await open();
    assert.deepEqual(reopened.pending('clerk'), book.pending('clerk'));
  });

  test('a call handed in past its deadline is refused by the sweep yet holds its place, also after a restart: no more than max_pending at once', async () => {
    const book = await open();
    const past = () => pending({ agent: 'rogue', expires_at: new Date(Date.now() - 60_000).toISOString() });
    for (let i = 0; i < 3; i++) assert.equal(await book.submit(past()), null);
    await book.sweep();
    assert.deepEqual(book.pending('rogue'), [], 'refused at once');
    const refusedOne = (e: unknown) => isThymosError(e, 'INVALID_INPUT') && /max_pending/.test(e.message);
    await assert.rejects(book.submit(pending({ agent: 'rogue' })), refusedOne);
    await assert.rejects((await open()).submit(pending({ agent: 'rogue' })), refusedOne, 'the places are held across a restart');
  });

  test('one agent keeps at most twice max_pending calls in the book, decided ones included: its oldest are forgotten, and one handed in again is asked about anew', async () => {
    const book = await open();
    const calls = Array.from({ length: 10 }, () => pending({ agent: 'busy' }));
    for (const c of calls) {
      await book.submit(c);
      await book.decide('busy', c.call_id, false, { who: 'approver', said: 'alice#2@h' }, 'no');
    }
    const [rows] = await db.query<[Array<{ count: number }>]>("SELECT count() FROM approval WHERE agent = 'busy' GROUP ALL");
    assert.equal(rows?.[0]?.count, 6, 'twice max_pending (3) kept in the database');
    assert.equal(
      await book.submit(calls.at(-1)!),
      delivered.find((d) => d.callId === calls.at(-1)!.call_id)!.decision,
      'the newest still answered',
    );
    assert.equal(await book.submit(calls[0]!), null, 'the oldest, forgotten, waits again');
    assert.deepEqual(
      book.pending('busy').map((p) => p.call_id),
      [calls[0]!.call_id],
    );
  });

  test('approvals a page at a time: each page within its budget (one call at least), in order, every call whole and once', async () => {
    const book = await open();
    const at = Date.now();
    const calls = Array.from({ length: 3 }, (_, i) =>
      pending({ agent: 'pager', requested_at: new Date(at + i).toISOString(), arguments: { note: 'p'.repeat(1000 * (i + 1)) } }),
    );
    for (const c of calls) await book.submit(c);
    const listed: PendingCall[] = [];
    let after: ApprovalsCursor | undefined;
    for (let pages = 0; ; pages++) {
      const page = book.page('pager', after, 2500);
      assert.ok(page.calls.length >= 1 && pages < 3, JSON.stringify(page.next));
      assert.ok(page.calls.length === 1 || JSON.stringify(page.calls).length <= 2500);
      listed.push(...page.calls);
      if (!page.next) break;
      after = page.next;
    }
    assert.deepEqual(listed, book.pending('pager'));
    assert.deepEqual(
      listed.map((c) => c.call_id),
      calls.map((c) => c.call_id),
    );
    const last = { requested_at: listed.at(-1)!.requested_at, call_id: listed.at(-1)!.call_id };
    assert.deepEqual(book.page('pager', last, 1), { calls: [], next: null }, 'after the last call, nothing');
  });
});
