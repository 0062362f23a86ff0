import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Surreal } from 'surrealdb';

import { openEmbeddedSurreal } from '../../../shared/engines/embedded-surreal.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import type { ApprovalDecision, PendingCall } from '../../../shared/protocol/tool-call.js';
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
    const mine = pending();
    await book.submit(mine);
    await assert.rejects(book.decide('desk', mine.call_id, true, { who: 'client', said: 'game.ts#1@host' }, 'mine'), (e: unknown) =>
      isThymosError(e, 'TOOL_DENIED'),
    );
    await assert.rejects(book.decide('other', mine.call_id, true, { who: 'client', said: 'alice#2@h' }, 'x'), (e: unknown) =>
      isThymosError(e, 'NOT_FOUND'),
    );
    while (book.pending('desk').length < 3) await book.submit(pending());
    await assert.rejects(book.submit(pending()), (e: unknown) => isThymosError(e, 'INVALID_INPUT') && /max_pending/.test(e.message));
    const reopened = await open();
    assert.deepEqual(reopened.pending('desk'), book.pending('desk'));
  });
});
