import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import type { ApprovalDecision } from '../../../shared/protocol/tool-call.js';
import { memoryToolCaller } from '../../helpers/tool-caller.js';

const dir = mkdtempSync(join(tmpdir(), 'thymos-call-approvals-'));
/** Where the script writes the name of each call it runs, one a line: it runs in a worker thread, whose globals the test does not see. */
const RUNS = join(dir, 'runs.log');
writeFileSync(
  join(dir, 'tools.mjs'),
  `import { appendFileSync } from 'node:fs';
export async function act(input, ctx) {
  appendFileSync(${JSON.stringify(RUNS)}, input.name + '\\n');
  if (input.slow) await new Promise((r) => setTimeout(r, 300));
  return 'done ' + input.name;
}
`,
);
const runs = () => {
  const counts: Record<string, number> = {};
  for (const name of existsSync(RUNS) ? readFileSync(RUNS, 'utf8').split('\n').filter(Boolean) : []) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
};

/** A ToolCaller over an in-memory store, with a mode the test switches. */
function caller(options: { failRemember?: boolean } = {}) {
  return memoryToolCaller(
    {
      do_it: {
        description: 'Acts',
        input: { name: {}, slow: { type: 'boolean', required: false } },
        sideEffect: 'writes_external',
        permission: 'confirm',
        executor: { kind: 'script', path: 'tools.mjs', export: 'act' },
      },
    },
    dir,
    options,
  );
}

const approve = (by = 'alice'): ApprovalDecision => ({ approved: true, by, reason: 'fine', at: new Date().toISOString() });

describe("the approvals of an agent's calls", () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('approved calls run once each, however the passes over them overlap', async () => {
    const { tools, rows, mode } = caller();
    const ask = async (name: string, slow = false) =>
      (await tools.call('do_it', { name, slow, reason: 'test' }, { caller: 'bob' })).call_id;
    const [y, x, z] = [await ask('Y', true), await ask('X'), await ask('Z')];
    mode.active = false;
    await tools.decide(y, approve());
    await tools.decide(x, approve());
    await tools.runApproved();
    assert.deepEqual(runs(), {}, 'a Listening agent runs no approved call with side effects');
    mode.active = true;
    const first = tools.runApproved();
    await new Promise((r) => setTimeout(r, 50));
    await tools.decide(z, approve());
    await tools.decide(x, approve('mallory'));
    await first;
    await tools.runApproved();
    assert.deepEqual(runs(), { X: 1, Y: 1, Z: 1 });
    assert.deepEqual(
      [...rows.values()].map((r) => r.status),
      ['ok', 'ok', 'ok'],
    );
    assert.equal(rows.get(x)!.decided_by, 'alice', 'the second decision changed nothing');
    const counts = Object.fromEntries(tools.counts().map((c) => [c.status, c.count]));
    assert.deepEqual(counts, { pending: 3, ok: 3 }, 'each call counts once as it waits and once as it ends');
  });

  test('a call that ran stays ok when recording its memory fails', async () => {
    const { tools, rows } = caller({ failRemember: true });
    const callId = (await tools.call('do_it', { name: 'W', reason: 'test' }, { caller: 'bob' })).call_id;
    await tools.decide(callId, approve());
    await tools.runApproved();
    assert.equal(rows.get(callId)!.status, 'ok');
    assert.equal(runs().W, 1);
  });

  test('no more than [tools] max_pending calls wait at once', async () => {
    const { tools } = caller();
    for (const n of ['a', 'b', 'c'])
      assert.equal((await tools.call('do_it', { name: n, reason: 'test' }, { caller: 'bob' })).status, 'pending');
    const fourth = await tools.call('do_it', { name: 'd', reason: 'test' }, { caller: 'bob' });
    assert.equal(fourth.status, 'refused');
    assert.match(fourth.error!.message, /max_pending = 3/);
  });
});
