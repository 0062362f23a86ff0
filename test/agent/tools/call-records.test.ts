import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { MemoryStore } from '../../../agent/memory/memory-store.js';
import type { CallStore } from '../../../agent/tools/call-store.js';
import { reopen } from '../../helpers/reopen.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { memoryToolCaller } from '../../helpers/tool-caller.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

const dir = tempDir('thymos-call-records-');
const ERRORS = join(REPO_ROOT, 'shared', 'errors', 'errors.ts');
writeFileSync(
  join(dir, 'tools.mjs'),
  `import { ErrorCode, ThymosError } from ${JSON.stringify(ERRORS)};
export function look(input) { return "seen " + input.what; }
export function post(input) { return "posted " + input.what; }
// Keeps the object it answered with and changes it later, as a cache would.
const tally = { count: 0 };
export function count() { tally.count += 1; return tally; }
// Fails with details that are no JSON (they hold themselves).
export function tangle() { const d = { why: 'upstream said no' }; d.self = d; throw new ThymosError(ErrorCode.TOOL_FAILED, 'upstream refused', { details: d }); }
`,
);
const TOOLS = {
  look: {
    description: 'Looks',
    input: { what: {} },
    sideEffect: 'read_only',
    executor: { kind: 'script', path: 'tools.mjs', export: 'look' },
  },
  peek: {
    description: 'Looks, once a person says so',
    input: { what: {} },
    sideEffect: 'read_only',
    permission: 'confirm',
    executor: { kind: 'script', path: 'tools.mjs', export: 'look' },
  },
  post: {
    description: 'Posts',
    input: { what: {} },
    sideEffect: 'writes_external',
    executor: { kind: 'script', path: 'tools.mjs', export: 'post' },
  },
  count: { description: 'Counts', input: {}, sideEffect: 'read_only', executor: { kind: 'script', path: 'tools.mjs', export: 'count' } },
  tangle: {
    description: 'Fails oddly',
    input: {},
    sideEffect: 'read_only',
    executor: { kind: 'script', path: 'tools.mjs', export: 'tangle' },
  },
};

/** The agent's real database, with each way a record reached it counted. */
function counted(store: MemoryStore) {
  const seen = { now: [] as string[], soon: [] as string[] };
  const calls: CallStore = {
    saveCall: (r) => (seen.now.push(`${r.tool} ${r.status}`), store.saveCall(r)),
    saveCallSoon: (r, ms) => (seen.soon.push(`${r.tool} ${r.status}`), store.saveCallSoon(r, ms)),
    getCall: (id) => store.getCall(id),
    callsWithStatus: (s) => store.callsWithStatus(s),
    callWithKey: (t, k) => store.callWithKey(t, k),
    claimKey: (t, k, id) => store.claimKey(t, k, id),
  };
  return { calls, seen };
}

describe('the record of a read-only call: written behind, read at once, kept across a restart', () => {
  let store: MemoryStore;
  const at = join(dir, 'db');

  before(async () => {
    store = await MemoryStore.open(at, { timeoutMs: 30_000 });
  });

  after(async () => {
    await store.close();
  });

  test('a read-only call answers before its record is written; get_call and a reopened database both find it', async () => {
    const { calls, seen } = counted(store);
    // A window no test waits out: only a read or the close can write the record.
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { calls, recordReadsWithinMs: 60_000 } });
    const done = await tools.call('look', { what: 'the gate', reason: 'checking' }, { caller: 'test' });
    assert.equal(done.status, 'ok');
    assert.deepEqual(seen, { now: [], soon: ['look ok'] });
    // A read of the store writes what waits first.
    assert.equal((await tools.getCall(done.call_id))?.result, 'seen the gate');
    const again = await tools.call('look', { what: 'the well', reason: 'checking' }, { caller: 'test' });
    await store.close();
    store = await reopen((timeoutMs) => MemoryStore.open(at, { timeoutMs }));
    assert.equal((await store.getCall(again.call_id))?.status, 'ok', 'the close wrote the record that waited');
    assert.equal((await store.getCall(done.call_id))?.result, 'seen the gate');
  });

  test('a call that changes something, and a read-only one that waited for a person, are stored before they answer', async () => {
    const { calls, seen } = counted(store);
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { calls, recordReadsWithinMs: 60_000 } });
    const posted = await tools.call('post', { what: 'a notice', reason: 'asked' }, { caller: 'test' });
    assert.equal(posted.status, 'ok');
    assert.deepEqual(seen.now, ['post running', 'post ok']);
    const pending = await tools.call('peek', { what: 'the vault', reason: 'asked' }, { caller: 'test' });
    assert.equal(pending.status, 'pending');
    await tools.decide(pending.call_id, { approved: true, by: 'warden', reason: 'fine', at: new Date().toISOString() });
    const ended = await waitFor(
      () => store.getCall(pending.call_id),
      (r) => r?.status === 'ok',
    );
    assert.equal(ended?.result, 'seen the vault');
    assert.deepEqual(seen.soon, [], 'nothing went behind');
    assert.ok(seen.now.includes('peek ok'));
  });

  test('the record stored is the answer given, though the tool changes the object it answered with', async () => {
    const { calls } = counted(store);
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { calls, recordReadsWithinMs: 60_000 } });
    const first = await tools.call('count', { reason: 'counting' }, { caller: 'test' });
    await tools.call('count', { reason: 'counting' }, { caller: 'test' });
    assert.deepEqual((await tools.getCall(first.call_id))?.result, { count: 1 });
  });

  test('a script error whose details are no JSON is recorded without them; the writes after it go on', async () => {
    const { calls } = counted(store);
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { calls, recordReadsWithinMs: 60_000 } });
    const tangled = await tools.call('tangle', { reason: 'trying' }, { caller: 'test' });
    assert.equal(tangled.status, 'failed');
    assert.equal(tangled.error?.code, 'TOOL_FAILED');
    assert.match(tangled.error?.message ?? '', /upstream refused \(its details were left out: they are not JSON\)/);
    assert.equal((await store.getCall(tangled.call_id))?.error?.details, undefined);
    const posted = await tools.call('post', { what: 'after it', reason: 'asked' }, { caller: 'test' });
    assert.equal(posted.status, 'ok');
    assert.equal((await store.getCall(posted.call_id))?.status, 'ok');
    const read = await tools.call('look', { what: 'the gate', reason: 'checking' }, { caller: 'test' });
    assert.equal((await store.getCall(read.call_id))?.result, 'seen the gate');
  });

  test('with record_reads_within_ms = 0 a read-only call is stored before it answers', async () => {
    const { calls, seen } = counted(store);
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { calls, recordReadsWithinMs: 0 } });
    await tools.call('look', { what: 'the road', reason: 'checking' }, { caller: 'test' });
    assert.deepEqual(seen, { now: ['look ok'], soon: [] });
  });

  test('a closed store takes no record behind: the call tries it now, and is refused as any write is', async () => {
    const { calls, seen } = counted(store);
    const { tools } = memoryToolCaller(TOOLS, dir, { overrides: { calls, recordReadsWithinMs: 60_000 } });
    await store.close();
    await assert.rejects(tools.call('look', { what: 'the tower', reason: 'checking' }, { caller: 'test' }), /closed/);
    assert.deepEqual(seen.now, ['look ok'], 'tried now once the write behind was refused');
    store = await reopen((timeoutMs) => MemoryStore.open(at, { timeoutMs }));
  });
});

async function waitFor<T>(get: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}
