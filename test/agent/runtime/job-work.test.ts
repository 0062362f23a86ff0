import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { JobResultSchema } from '../../../agent/runtime/agent-behavior.js';
import { jobCalls, jobText } from '../../../agent/runtime/job-work.js';
import { type Job, JobSchema } from '../../../shared/protocol/job.js';
import { IdempotencyKeySchema } from '../../../shared/protocol/tool-call.js';

const job = (id: string, payload: unknown = 'x'): Job => ({
  id,
  queue: 'support',
  skill: 'billing',
  payload,
  published_at: new Date().toISOString(),
});

describe('a job, as its worker reads it', () => {
  test("its calls' keys: numbered per tool from 1, the same on every delivery, and never another job's or a caller's", () => {
    const keys = (id: string, tools: string[]) => {
      const calls = jobCalls(job(id));
      return tools.map((t) => calls.keyOf(t));
    };
    const a = keys('J1', ['refund', 'refund', 'reply']);
    assert.deepEqual(a, ['job:support/billing/J1#1', 'job:support/billing/J1#2', 'job:support/billing/J1#1']);
    assert.deepEqual(keys('J1', ['refund', 'refund', 'reply']), a, 'worked again, the same keys');
    // A job id may hold ":" but not "/" or "#": J1's second key is not J1:2's first.
    const b = keys('J1:2', ['refund']);
    assert.ok(!a.includes(b[0]!), `${b[0]} is not among ${a.join(', ')}`);
    assert.equal(jobCalls(job('J1')).caller, 'job:J1');
    assert.equal(IdempotencyKeySchema.safeParse(a[0]).success, false, "a caller may not give a job's key");
    assert.equal(IdempotencyKeySchema.safeParse('order-17-refund').success, true);
  });

  test('its words: payload.intent, else payload.text, else a string payload; nothing else', () => {
    assert.equal(jobText(job('a', { intent: 'refund ORD-1', text: 'ignored' })), 'refund ORD-1');
    assert.equal(jobText(job('a', { intent: 42, text: 'the text' })), 'the text', 'an intent that is not words falls back to the text');
    assert.equal(jobText(job('a', 'just words')), 'just words');
    for (const p of [{ intent: '  ' }, ['refund'], 7, null, {}]) assert.equal(jobText(job('a', p)), undefined, JSON.stringify(p));
  });

  test('a payload past 64 KiB is not a job, at the worker as at the edge', () => {
    const big = job('big', { text: 'x'.repeat(70_000) });
    const parsed = JobSchema.safeParse(big);
    assert.equal(parsed.success, false);
    assert.match(JSON.stringify(parsed.error?.issues), /65536 bytes/);
  });

  test("work()'s result: done with a note cut to 2,000, retry or give_up with a reason; a code is upper-case; anything else is named", () => {
    assert.deepEqual(JobResultSchema.parse({ status: 'done', note: 'n'.repeat(3000), extra: 1 }), {
      status: 'done',
      note: 'n'.repeat(2000),
    });
    assert.deepEqual(JobResultSchema.parse({ status: 'give_up', reason: 'no', code: 'NOT_MINE' }), {
      status: 'give_up',
      reason: 'no',
      code: 'NOT_MINE',
    });
    for (const bad of [
      { status: 'maybe' },
      { status: 'retry' },
      { status: 'retry', reason: '' },
      { status: 'give_up', reason: 'no', code: 'lower' },
      null,
      'done',
    ]) {
      assert.equal(JobResultSchema.safeParse(bad).success, false, JSON.stringify(bad));
    }
  });
});
