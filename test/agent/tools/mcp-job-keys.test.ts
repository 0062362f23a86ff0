import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { forwardedKey } from '../../../agent/tools/mcp-executor.js';
import { IdempotencyKeySchema } from '../../../shared/protocol/tool-call.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/**
 * A job's call of a tool that another agent runs (an Mcp executor): the job's key `job:…`, which
 * no caller may give an agent, reaches the called agent under the calling tool's name. Real
 * nats-server, real agents under pm2: an apprentice works forge orders by asking the blacksmith.
 */
describe("a job's call through an Mcp tool of another agent", () => {
  let tf: TestFleet;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-mcp-job-'));
  const forged = () =>
    existsSync(join(dir, 'forged.log'))
      ? readFileSync(join(dir, 'forged.log'), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { item: string; key: string; caller: string })
      : [];

  before(async () => {
    writeFileSync(
      join(dir, 'forge.mjs'),
      `import { appendFileSync } from 'node:fs';
export function forge(input, ctx) {
  appendFileSync(${JSON.stringify(join(dir, 'forged.log'))}, JSON.stringify({ item: input.item, key: ctx.idempotencyKey, caller: ctx.caller }) + '\\n');
  return { forged: input.item };
}
`,
    );
    // The apprentice asks twice, by two tools, then sends the job back once: delivered again, it asks again.
    writeFileSync(
      join(dir, 'behavior.mjs'),
      `export function createBehavior({ id }) {
  if (id !== 'apprentice') return {};
  return {
    work: async (ctx, request) => {
      const item = request.job.payload.item;
      const calls = [await request.call('ask_forge', { item, reason: 'an order' }), await request.call('ask_forge_again', { item, reason: 'a spare' })];
      const failed = calls.find((c) => c.status !== 'ok');
      if (failed) return { status: 'give_up', reason: JSON.stringify(failed.error), code: 'FORGE_REFUSED' };
      if (request.attempt === 1) return { status: 'retry', reason: 'once more' };
      return { status: 'done', note: calls.map((c) => (c.replayed ? 'replayed' : 'made')).join(' ') };
    },
  };
}
`,
    );
    writeFileSync(
      join(dir, 'forge.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["orders"] { maxDeliver = 3; backoffMs { 100 } } }
agents {
  ["blacksmith"] { persona { name = "Bram" }; capabilities { "forge_item" } }
  ["apprentice"] { persona { name = "Ash" }; skills { "forging" }; queues { "orders" }; capabilities { "ask_forge"; "ask_forge_again" } }
}
local forgeInput = new Mapping<String, ToolField> { ["item"] {} }
tools {
  ["forge_item"] { description = "Forge an item"; input = forgeInput; output { ["forged"] {} }; sideEffect = "writes_external"; executor = new Script { path = "forge.mjs"; export = "forge" } }
  ["ask_forge"] { description = "Ask the blacksmith to forge"; input = forgeInput; sideEffect = "writes_external"; executor = new Mcp { agent = "blacksmith"; tool = "forge_item" } }
  ["ask_forge_again"] { description = "Ask the blacksmith for another"; input = forgeInput; sideEffect = "writes_external"; executor = new Mcp { agent = "blacksmith"; tool = "forge_item" } }
}
`,
    );
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0'], {
      schema: join(dir, 'forge.pkl'),
      agent: [`behavior = ${JSON.stringify(join(dir, 'behavior.mjs'))}`],
    });
    await Promise.all([tf.fleet.start('blacksmith'), tf.fleet.start('apprentice')]);
  });
  after(async () => {
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test("succeeds, each tool's call made once under its own key, and delivered again the job's calls answer their first outcomes", async () => {
    await tf.fleet.jobs.publish('orders', 'forging', { item: 'horseshoe' }, { id: 'O-1' });
    const apprentice = await tf.fleet.agent('apprentice');
    const done = await eventually(
      async () => {
        const out = (await apprentice.callTool({ name: 'recall', arguments: { query: 'O-1', tags: ['job'] } })) as {
          structuredContent?: { results: Array<{ content: string }> };
        };
        return out.structuredContent?.results.find((h) => /O-1 \(orders\/forging, delivery 2\).*→ done/.test(h.content));
      },
      60_000,
      'the order done on its second delivery',
    );
    assert.match(done.content, /done: replayed replayed/, 'the second delivery made no call again');
    await eventually(
      async () => {
        const b = (await tf.fleet.jobs.list('orders')).find((r) => r.skill === 'forging');
        return b && b.waiting === 0 && b.in_progress === 0 ? true : undefined;
      },
      30_000,
      'the order acknowledged',
    );
    assert.deepEqual(await tf.fleet.jobs.dead({ queue: 'orders' }), [], 'not given up');
    assert.deepEqual(forged(), [
      { item: 'horseshoe', key: 'via:ask_forge/job:orders/forging/O-1#1', caller: 'agent:apprentice' },
      { item: 'horseshoe', key: 'via:ask_forge_again/job:orders/forging/O-1#1', caller: 'agent:apprentice' },
    ]);
  });
});

test('the key another agent is sent: a caller key as it is; a job key or a later generation under the tool, valid, distinct and bounded', () => {
  const sent = (key: string) => forwardedKey('ask_forge', key);
  assert.equal(sent('shoe-1'), 'shoe-1');
  assert.equal(sent('job:orders/forging/O-1#1'), 'via:ask_forge/job:orders/forging/O-1#1');
  assert.equal(sent('refund-AB~2'), 'via:ask_forge/refund-AB%7E2');
  assert.notEqual(forwardedKey('ask_forge_again', 'job:orders/forging/O-1#1'), sent('job:orders/forging/O-1#1'));
  const long = sent(`job:${'q'.repeat(64)}/${'s'.repeat(64)}/${'i'.repeat(128)}#1`);
  assert.match(long, /^via:ask_forge\/sha256:[0-9a-f]{64}$/);
  const keys = ['job:a/b/c#1', 'job:a/b/c#1~2', 'x~2', 'x%7E2~1', 'two words', 'job:a/b/c%#1', long];
  for (const k of keys) assert.equal(IdempotencyKeySchema.safeParse(sent(k)).success, true, k);
  assert.equal(new Set(keys.map(sent)).size, keys.length);
});
