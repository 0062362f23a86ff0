import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { eventually } from '../../helpers/fleet.js';
import { memoryToolCaller } from '../../helpers/tool-caller.js';

const dir = mkdtempSync(join(tmpdir(), 'thymos-call-keys-'));
/** Where the script writes the key of each call it runs, one a line: it runs in a worker thread, whose globals the test does not see. */
const RUNS = join(dir, 'runs.log');
writeFileSync(
  join(dir, 'tools.mjs'),
  `import { appendFileSync } from 'node:fs';
export async function post(input, ctx) {
  appendFileSync(${JSON.stringify(RUNS)}, ctx.idempotencyKey + '\\n');
  if (input.slow) await new Promise((r) => setTimeout(r, input.text === 'long' ? 1500 : 200));
  if (input.text === 'fail') throw new Error('the board is full');
  return 'posted ' + input.text;
}
`,
);
writeFileSync(
  join(dir, 'append.mjs'),
  `import { appendFileSync } from 'node:fs';\nappendFileSync(process.argv[2], process.env.THYMOS_IDEMPOTENCY_KEY + '\\n');\nprocess.stdout.write('appended');\n`,
);
const scriptRuns = () => (existsSync(RUNS) ? readFileSync(RUNS, 'utf8').split('\n').filter(Boolean) : []);

/** What the local service received: the Idempotency-Key of each request. */
const received: Array<string | undefined> = [];

describe('idempotency keys, end to end: a repeated key runs a call with side effects once, whatever the executor', () => {
  let service: Server;
  let tools: ReturnType<typeof memoryToolCaller>['tools'];
  const ledger = join(dir, 'ledger.txt');

  before(async () => {
    service = createServer((req, res) => {
      received.push(req.headers['idempotency-key'] as string | undefined);
      req.resume();
      req.on('end', () => {
        res.writeHead(req.url === '/fail' ? 500 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ refunded: true }));
      });
    });
    await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
    writeFileSync(ledger, '');
    ({ tools } = memoryToolCaller(
      {
        refund: {
          description: 'Refunds',
          input: { order_id: {}, amount: { type: 'number' } },
          sideEffect: 'writes_external',
          idempotencyKey: 'refund-{order_id}',
          executor: { kind: 'http', method: 'POST', url: `${url}/refunds`, body: ['order_id', 'amount'] },
        },
        refund_once_a_second: {
          description: 'Refunds, a key kept 1 s',
          input: { order_id: {}, amount: { type: 'number' } },
          sideEffect: 'writes_external',
          idempotencyKey: 'refund-{order_id}-{amount}',
          keyExpiresAfterS: 1,
          executor: { kind: 'http', method: 'POST', url: `${url}/refunds`, body: ['order_id', 'amount'] },
        },
        flaky: {
          description: 'Fails',
          input: { order_id: {} },
          sideEffect: 'writes_external',
          idempotencyKey: 'flaky-{order_id}',
          executor: { kind: 'http', method: 'POST', url: `${url}/fail` },
        },
        peek: {
          description: 'Reads',
          input: { order_id: {} },
          sideEffect: 'read_only',
          idempotencyKey: '{order_id}',
          executor: { kind: 'http', url: `${url}/peek` },
        },
        post: {
          description: 'Posts',
          input: { text: {}, slow: { type: 'boolean', required: false } },
          sideEffect: 'writes_external',
          executor: { kind: 'script', path: 'tools.mjs', export: 'post' },
        },
        post_kept_1s: {
          description: 'Posts, a key kept 1 s',
          input: { text: {}, slow: { type: 'boolean', required: false } },
          sideEffect: 'writes_external',
          keyExpiresAfterS: 1,
          executor: { kind: 'script', path: 'tools.mjs', export: 'post' },
        },
        append: {
          description: 'Appends',
          input: { file: {} },
          sideEffect: 'irreversible',
          permission: 'admin',
          executor: { kind: 'subprocess', command: process.execPath, args: ['append.mjs', '{file}'] },
        },
      },
      dir,
      { overrides: { allowAdmin: true } },
    ));
  });

  after(async () => {
    await new Promise((r) => service.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  test('Http: the key from the template reaches the service as Idempotency-Key, and a repeat answers with the first call', async () => {
    received.length = 0;
    const first = await tools.call('refund', { order_id: 'AB-1', amount: 20, reason: 'broken kettle' }, { caller: 'alice' });
    const again = await tools.call('refund', { order_id: 'AB-1', amount: 20, reason: 'asked twice' }, { caller: 'bob' });
    assert.equal(first.status, 'ok', JSON.stringify(first.error));
    assert.deepEqual(received, ['refund-AB-1'], 'the service saw one request, with the key');
    assert.equal(again.call_id, first.call_id);
    assert.equal(again.replayed, true);
    assert.deepEqual(again.result, first.result);
    await assert.rejects(
      tools.call('refund', { order_id: 'AB-1', amount: 25, reason: 'more' }, { caller: 'bob' }),
      (e: { code: string; details?: { call_id: string } }) => e.code === 'IDEMPOTENCY_CONFLICT' && e.details?.call_id === first.call_id,
    );
    assert.equal(received.length, 1);
  });

  test('a "~" in a template value is percent-encoded: no value spells another key\'s later generation', async () => {
    received.length = 0;
    const tilde = await tools.call('refund', { order_id: 'AB-9~2', amount: 20, reason: 'x' }, { caller: 'alice' });
    assert.equal(tilde.status, 'ok', JSON.stringify(tilde.error));
    assert.equal(tilde.idempotency_key, 'refund-AB-9%7E2');
    assert.deepEqual(received, ['refund-AB-9%7E2'], 'the service never sees "refund-AB-9~2", the second generation of refund-AB-9');
  });

  test('keyExpiresAfterS: within it a repeat answers with the first call; past it the same key is a new call, sent as key~2, then key~3', async () => {
    received.length = 0;
    const args = { order_id: 'AB-7', amount: 20, reason: 'broken kettle' };
    const past = async (call: { finished_at?: string }) =>
      eventually(() => (Date.now() - Date.parse(call.finished_at!) > 1000 ? true : undefined), 10_000, 'the key to expire');
    const first = await tools.call('refund_once_a_second', args, { caller: 'alice' });
    const again = await tools.call('refund_once_a_second', args, { caller: 'alice' });
    assert.deepEqual([first.status, again.replayed, again.call_id], ['ok', true, first.call_id]);
    assert.deepEqual(received, ['refund-AB-7-20']);
    await past(first);
    const later = await tools.call('refund_once_a_second', args, { caller: 'alice' });
    assert.equal(later.status, 'ok', JSON.stringify(later.error));
    assert.notEqual(later.call_id, first.call_id, 'a new call');
    assert.equal(later.idempotency_key, 'refund-AB-7-20~2');
    assert.equal(
      (await tools.call('refund_once_a_second', args, { caller: 'bob' })).call_id,
      later.call_id,
      'answered by the new one while it is fresh',
    );
    await past(later);
    assert.equal((await tools.call('refund_once_a_second', args, { caller: 'alice' })).idempotency_key, 'refund-AB-7-20~3');
    assert.deepEqual(received, ['refund-AB-7-20', 'refund-AB-7-20~2', 'refund-AB-7-20~3'], 'the service saw each generation once');
  });

  test("Script: the caller's key is used when the tool declares none; concurrent repeats run once", async () => {
    const [a, b, c] = await Promise.all(
      [1, 2, 3].map(() =>
        tools.call('post', { text: 'wolves', slow: true, reason: 'warn' }, { caller: 'alice', idempotencyKey: 'quest-42' }),
      ),
    );
    assert.deepEqual(scriptRuns(), ['quest-42']);
    assert.equal(new Set([a!.call_id, b!.call_id, c!.call_id]).size, 1);
    assert.equal([a, b, c].filter((r) => r!.replayed).length, 2);
    const other = await tools.call('post', { text: 'wolves', reason: 'warn' }, { caller: 'alice' });
    assert.equal(other.idempotency_key, other.call_id, 'without a key, the call id is the key: every call runs');
    assert.equal(scriptRuns().length, 2);
  });

  test('Subprocess: THYMOS_IDEMPOTENCY_KEY carries the key; a repeat runs the program once', async () => {
    const first = await tools.call('append', { file: ledger, reason: 'record' }, { caller: 'alice', idempotencyKey: 'ledger-1' });
    const again = await tools.call('append', { file: ledger, reason: 'record' }, { caller: 'alice', idempotencyKey: 'ledger-1' });
    assert.equal(first.status, 'ok', JSON.stringify(first.error));
    assert.equal(again.replayed, true);
    assert.equal(readFileSync(ledger, 'utf8'), 'ledger-1\n');
  });

  test('keyExpiresAfterS counts from the end of the call: a call that ran longer than it still answers a repeat made just after', async () => {
    const runs = scriptRuns().length;
    const first = await tools.call(
      'post_kept_1s',
      { text: 'long', slow: true, reason: 'warn' },
      { caller: 'alice', idempotencyKey: 'long-1' },
    );
    assert.equal(first.status, 'ok', JSON.stringify(first.error));
    assert.ok(Date.parse(first.finished_at!) - Date.parse(first.requested_at) > 1000, 'it ran longer than its key is kept');
    const again = await tools.call(
      'post_kept_1s',
      { text: 'long', slow: true, reason: 'warn' },
      { caller: 'alice', idempotencyKey: 'long-1' },
    );
    assert.deepEqual([again.replayed, again.call_id, again.idempotency_key], [true, first.call_id, 'long-1']);
    assert.deepEqual(scriptRuns().slice(runs), ['long-1'], 'it ran once');
  });

  test('a failed call does not count: a repeat runs again with the same key; a read-only tool always runs', async () => {
    received.length = 0;
    const failed = await tools.call('flaky', { order_id: 'X', reason: 'try' }, { caller: 'alice' });
    const retried = await tools.call('flaky', { order_id: 'X', reason: 'try again' }, { caller: 'alice' });
    assert.equal(failed.status, 'failed');
    assert.notEqual(retried.call_id, failed.call_id);
    assert.deepEqual(received, ['flaky-X', 'flaky-X']);
    received.length = 0;
    await tools.call('peek', { order_id: 'X' }, { caller: 'alice' });
    await tools.call('peek', { order_id: 'X' }, { caller: 'alice' });
    assert.equal(received.length, 2);
  });
});
