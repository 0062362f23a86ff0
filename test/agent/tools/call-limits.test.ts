import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { memoryToolCaller } from '../../helpers/tool-caller.js';

const dir = mkdtempSync(join(tmpdir(), 'thymos-call-limits-'));
/** Where the script writes when each call starts (+) and ends (-), one a line: calls run in worker threads, whose globals the test does not see. */
const LOAD = join(dir, 'load.log');
writeFileSync(
  join(dir, 'tools.mjs'),
  `import { appendFileSync } from 'node:fs';
export async function work(input) {
  appendFileSync(${JSON.stringify(LOAD)}, '+\\n');
  await new Promise((r) => setTimeout(r, input.ms));
  appendFileSync(${JSON.stringify(LOAD)}, '-\\n');
  return 'worked';
}
`,
);
/** How many calls ran, and the most that ran at once. */
const load = () => {
  let now = 0;
  let most = 0;
  let runs = 0;
  for (const mark of existsSync(LOAD) ? readFileSync(LOAD, 'utf8').split('\n').filter(Boolean) : []) {
    if (mark === '+') runs++;
    now += mark === '+' ? 1 : -1;
    most = Math.max(most, now);
  }
  return { most, runs };
};

/** How the local service answers each path: a list of [status, Retry-After] taken in turn, then 200. */
const script = new Map<string, Array<[number, string | undefined]>>();
const hits = new Map<string, number>();

describe("a tool's limits, and a service that says when to come back", () => {
  let service: Server;
  let url: string;
  const tools = () =>
    memoryToolCaller(
      {
        one_at_a_time: {
          description: 'Works alone',
          input: { ms: { type: 'integer' } },
          sideEffect: 'read_only',
          maxConcurrent: 1,
          executor: { kind: 'script', path: 'tools.mjs', export: 'work' },
        },
        once_a_minute: {
          description: 'Works rarely',
          input: { ms: { type: 'integer' } },
          sideEffect: 'read_only',
          ratePerMinute: 1,
          timeoutMs: 3000, // a Script starts a worker thread on its first call, slow on a busy machine
          executor: { kind: 'script', path: 'tools.mjs', export: 'work' },
        },
        read: { description: 'Reads', sideEffect: 'read_only', timeoutMs: 5000, executor: { kind: 'http', url: `${url}/read` } },
        read_later: {
          description: 'Reads, told to wait long',
          sideEffect: 'read_only',
          timeoutMs: 2000,
          executor: { kind: 'http', url: `${url}/read-later` },
        },
        write: {
          description: 'Writes',
          sideEffect: 'writes_external',
          timeoutMs: 5000,
          executor: { kind: 'http', method: 'POST', url: `${url}/write` },
        },
        write_keyed: {
          description: 'Writes with a key',
          input: { id: {} },
          sideEffect: 'writes_external',
          idempotencyKey: 'w-{id}',
          timeoutMs: 5000,
          executor: { kind: 'http', method: 'POST', url: `${url}/write-keyed` },
        },
      },
      dir,
    ).tools;

  before(async () => {
    service = createServer((req, res) => {
      const path = req.url!;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const [status, retryAfter] = script.get(path)?.shift() ?? [200, undefined];
      res.writeHead(status, { 'content-type': 'application/json', ...(retryAfter !== undefined ? { 'retry-after': retryAfter } : {}) });
      res.end(JSON.stringify({ status }));
    });
    await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise((r) => service.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  test('maxConcurrent: calls over the limit wait their turn, and all run', async () => {
    const caller = tools();
    const records = await Promise.all([1, 2, 3].map(() => caller.call('one_at_a_time', { ms: 100 }, { caller: 'test' })));
    assert.deepEqual(
      records.map((r) => r.status),
      ['ok', 'ok', 'ok'],
    );
    assert.equal(load().most, 1, 'never two at once');
  });

  test('ratePerMinute: a call whose timeout passes while it waits is refused TOOL_RATE_LIMITED, and never ran', async () => {
    const caller = tools();
    const runs = load().runs;
    const first = await caller.call('once_a_minute', { ms: 1 }, { caller: 'test' });
    const second = await caller.call('once_a_minute', { ms: 1 }, { caller: 'test' });
    assert.equal(first.status, 'ok');
    assert.equal(second.status, 'refused');
    assert.equal(second.error?.code, 'TOOL_RATE_LIMITED');
    assert.match(
      second.error!.message,
      /waited \d+ ms for its turn \(ratePerMinute 1\) and its timeout \(3000 ms\) passed; it did not run/,
    );
    assert.equal(load().runs, runs + 1);
  });

  test('a 429 with Retry-After is tried once more for a read-only tool, within the timeout', async () => {
    script.set('/read', [[429, '1']]);
    const r = await tools().call('read', {}, { caller: 'test' });
    assert.equal(r.status, 'ok', JSON.stringify(r.error));
    assert.equal(hits.get('/read'), 2);
  });

  test('a wait longer than the timeout is not tried: TOOL_RATE_LIMITED with the wait', async () => {
    script.set('/read-later', [[429, '30']]);
    const r = await tools().call('read_later', {}, { caller: 'test' });
    assert.equal(r.error?.code, 'TOOL_RATE_LIMITED');
    assert.deepEqual(r.error?.details, { status: 429, retry_after_ms: 30_000 });
    assert.equal(hits.get('/read-later'), 1);
  });

  test('a Retry-After that is neither whole seconds nor an HTTP date is not waited for', async () => {
    for (const value of ['1.5', '-5', 'soon']) {
      hits.delete('/read-later');
      script.set('/read-later', [[429, value]]);
      const r = await tools().call('read_later', {}, { caller: 'test' });
      assert.equal(r.error?.code, 'TOOL_RATE_LIMITED', value);
      assert.equal(hits.get('/read-later'), 1, `${value}: not retried`);
    }
  });

  test('a call with side effects is tried again only when its tool has an idempotency key', async () => {
    script.set('/write', [[503, '0']]);
    const plain = await tools().call('write', { reason: 'test' }, { caller: 'test' });
    assert.equal(plain.error?.code, 'TOOL_FAILED');
    assert.equal(hits.get('/write'), 1, 'not repeated: the service might have done it');
    script.set('/write-keyed', [[503, new Date(Date.now() - 1000).toUTCString()]]);
    const keyed = await tools().call('write_keyed', { id: '7', reason: 'test' }, { caller: 'test' });
    assert.equal(keyed.status, 'ok', JSON.stringify(keyed.error));
    assert.equal(hits.get('/write-keyed'), 2);
  });
});
