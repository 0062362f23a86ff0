import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { isThymosError } from '../../shared/errors/errors.js';
import { runThymos, startTestFleet, type TestFleet } from '../helpers/fleet.js';
import { REPO_ROOT } from '../helpers/workspace.js';

/** A fleet's work queues from a job loop and from the CLI: publish, deduplicate, see the backlog. */
describe('fleet.jobs and thymos jobs', () => {
  let tf: TestFleet;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-desk-'));
  const schema = join(dir, 'desk.pkl');

  before(async () => {
    writeFileSync(
      schema,
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] { maxDeliver = 3 } }
agents {
  ["billing_desk"] { persona { name = "Billing" }; skills { "billing" }; queues { "support" } }
  ["shipping_desk"] { persona { name = "Shipping" }; skills { "shipping" } }
}
`,
    );
    tf = await startTestFleet([], { schema });
  });
  after(async () => {
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a job loop publishes jobs (one id, one job) and sees each skill's backlog; a bad job or queue is refused, coded", async () => {
    const { fleet } = tf;
    const first = await fleet.jobs.publish('support', 'billing', { ticket: 'T-1', text: 'I was charged twice' }, { id: 'T-1' });
    const again = await fleet.jobs.publish('support', 'billing', { ticket: 'T-1', text: 'I was charged twice' }, { id: 'T-1' });
    assert.deepEqual([first.id, first.duplicate, again.duplicate, again.seq], ['T-1', false, true, first.seq]);
    await fleet.jobs.publish('support', 'legal', { ticket: 'T-2' });
    const rows = await fleet.jobs.list();
    const bySkill = Object.fromEntries(rows.map((r) => [r.skill, r]));
    assert.deepEqual(Object.keys(bySkill).sort(), ['billing', 'legal', 'shipping']);
    assert.equal(bySkill.billing!.waiting, 1);
    assert.equal(bySkill.billing!.served, true);
    assert.equal(bySkill.shipping!.waiting, 0);
    assert.equal(bySkill.legal!.served, false);
    await assert.rejects(fleet.jobs.publish('sales', 'billing', {}), (err: unknown) => isThymosError(err, 'NOT_FOUND'));
    await assert.rejects(
      fleet.jobs.publish('support', 'bill ing', {}),
      (err: unknown) => isThymosError(err, 'INVALID_INPUT') && /skill/.test(err.message),
    );
  });

  test('thymos jobs publish and ls', async () => {
    const sent = await runThymos(['jobs', 'publish', 'support', 'shipping', '{"ticket":"T-3"}', '--id', 'T-3'], tf.ws.dir);
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(sent.stdout, /job T-3 queued for shipping on support/);
    const twice = await runThymos(['jobs', 'publish', 'support', 'shipping', '{"ticket":"T-3"}', '--id', 'T-3'], tf.ws.dir);
    assert.match(twice.stdout, /job T-3 was published before/);
    const ls = await runThymos(['jobs', 'ls'], tf.ws.dir);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /^support +shipping +1 +0 +\d+s +yes$/m);
    assert.match(ls.stdout, /^support +legal +1 +0 +\d+s +no agent has it$/m);
    const bad = await runThymos(['jobs', 'publish', 'support', 'billing', '{oops'], tf.ws.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /the payload is not JSON/);
  });
});
