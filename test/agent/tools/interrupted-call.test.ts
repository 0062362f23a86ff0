import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { jetstream } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';

import { type Approver, approver } from '../../../client/approver.js';
import { fleetNatsUrl } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { asFleetSupervisor, eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/**
 * A call with side effects that a crash cut off: the agent is killed (SIGKILL, by its PID) after
 * the Script's side effect and before its record, since the Script's first run of a key writes
 * its effect and then waits for nothing. It runs again by itself only when its tool says the
 * service honours the key (`keyHonoured`); otherwise it goes back to the approvals as
 * interrupted, and the job it belongs to stays unsettled until a person decides. So does a call of
 * a job delivered again after another worker had it, which may have made the call.
 */
describe('calls a crash interrupted', () => {
  let tf: TestFleet;
  let desk: Approver;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-interrupted-'));
  const effects = join(dir, 'effects.log');
  /** How many times the side effect of the call under `key` happened (the line `key`), or the read of it (`look key`). */
  const times = (key: string) =>
    existsSync(effects)
      ? readFileSync(effects, 'utf8')
          .split('\n')
          .filter((l) => l === key).length
      : 0;
  const tool = (name: string, extra: string) => `  ["${name}"] {
    description = "Writes a note for ${name}"
    input { ["note"] {} }
    sideEffect = "writes_external"
    timeoutMs = 300000
    executor = new Script { path = "effects.mjs"; export = "note" }
    ${extra}
  }`;

  before(async () => {
    writeFileSync(
      join(dir, 'effects.mjs'),
      `import { appendFileSync, readFileSync } from 'node:fs';
const LOG = new URL('./effects.log', import.meta.url);
export async function note(input, ctx) {
  appendFileSync(LOG, ctx.idempotencyKey + '\\n');
  const times = readFileSync(LOG, 'utf8').split('\\n').filter((l) => l === ctx.idempotencyKey).length;
  // The first run of a key waits after its side effect, so the agent is killed before it is recorded.
  if (times === 1) await new Promise(() => undefined);
  return { noted: input.note, times };
}
export function look(input, ctx) {
  appendFileSync(LOG, 'look ' + ctx.idempotencyKey + '\\n');
  return { noted: input.note };
}
`,
    );
    writeFileSync(
      join(dir, 'behavior.mjs'),
      `export function createBehavior() {
  return {
    async work(ctx, { job, call }) {
      if (job.payload.look) await call('look_note', { note: job.payload.note });
      const r = await call(job.payload.tool, { note: job.payload.note, reason: 'the job asks for it' });
      if (r.status === 'refused') return { status: 'give_up', reason: r.error?.message ?? 'refused' };
      return r.status === 'failed' ? { status: 'retry', reason: r.error?.message ?? 'failed' } : { status: 'done', note: r.status };
    },
  };
}
`,
    );
    writeFileSync(
      join(dir, 'desk.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] { maxDeliver = 5; ackWaitMs = 2000; backoffMs { 100 } } }
agents { ["desk"] { persona { name = "Desk" }; skills { "orders" }; capabilities { "confirm_note"; "plain_note"; "honoured_note"; "look_note" } } }
tools {
${tool('confirm_note', 'permission = "confirm"')}
${tool('plain_note', '')}
${tool('honoured_note', 'keyHonoured = true')}
  ["look_note"] {
    description = "Reads a note"
    input { ["note"] {} }
    sideEffect = "read_only"
    executor = new Script { path = "effects.mjs"; export = "look" }
  }
}
`,
    );
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0'], {
      schema: join(dir, 'desk.pkl'),
      agent: [`behavior = ${JSON.stringify(join(dir, 'behavior.mjs'))}`],
    });
    // Deciding is the approver's, with a key of its own.
    desk = await approver(tf.ws.configPath);
    await tf.fleet.start('desk');
  });
  after(async () => {
    await desk?.close();
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const deskPid = async () => (await tf.fleet.status()).agents.find((a) => a.id === 'desk')!.pid!;
  const killAndWaitForRestart = async () => {
    const pid = await deskPid();
    process.kill(pid, 'SIGKILL');
    await eventually(
      async () => {
        const row = (await tf.fleet.status()).agents.find((a) => a.id === 'desk')!;
        return row.pid !== undefined && row.pid !== pid && row.state === 'active' ? true : undefined;
      },
      60_000,
      'pm2 to restart the agent',
    );
  };
  const unsettledJobs = async () => {
    const b = (await tf.fleet.jobs.list('support')).find((r) => r.skill === 'orders')!;
    return b.waiting + b.in_progress;
  };
  const delivered = async () => (await tf.fleet.jobs.list('support')).find((r) => r.skill === 'orders')!.delivered;
  const settled = async () => ((await unsettledJobs()) === 0 ? true : undefined);
  const interrupted = (tool: string) =>
    eventually(
      async () => (await tf.fleet.approvals('desk')).find((p) => p.tool === tool && p.interrupted_at !== undefined),
      60_000,
      `${tool} listed as interrupted`,
    );

  test('an approved confirm call cut off while it runs is asked about again; approving runs it once more, and only then is its job settled', async () => {
    const key = 'job:support/orders/J-confirm#1';
    await tf.fleet.jobs.publish('support', 'orders', { tool: 'confirm_note', note: 'refund ORD-1' }, { id: 'J-confirm' });
    const first = await eventually(
      async () => (await tf.fleet.approvals('desk')).find((p) => p.tool === 'confirm_note'),
      30_000,
      'the call waiting for approval',
    );
    assert.equal(first.interrupted_at, undefined);
    await assert.rejects(
      desk.approve('desk', first.call_id, { reason: 'it is done', done: true }),
      { code: 'INVALID_INPUT' },
      'a call that has not run cannot be marked done',
    );
    assert.ok((await unsettledJobs()) > 0, 'a job whose call waits for a person is held, not acknowledged');
    await desk.approve('desk', first.call_id, { reason: 'checked with the customer' });
    await eventually(() => (times(key) === 1 ? true : undefined), 30_000, 'the approved call to run');
    await killAndWaitForRestart();
    const again = await interrupted('confirm_note');
    assert.equal(again.call_id, first.call_id, 'the same call, asked about anew');
    assert.equal(times(key), 1, 'not run again by itself');
    assert.ok((await unsettledJobs()) > 0, 'its job is not settled while the call waits');
    const report = await desk.approve('desk', first.call_id, { reason: 'it did not go through: run it again' });
    assert.equal(report.decision, 'approved');
    await eventually(settled, 60_000, 'the job settled once the call ran');
    assert.equal(times(key), 2, 'run again once');
    assert.equal((await tf.fleet.approvals('desk')).length, 0);
  });

  test('a call cut off between its side effect and its record, retried under its key, is not run again but asked about; marked done, its job is settled without running it', async () => {
    const key = 'job:support/orders/J-plain#1';
    await tf.fleet.jobs.publish('support', 'orders', { tool: 'plain_note', note: 'ship ORD-2' }, { id: 'J-plain' });
    await eventually(() => (times(key) === 1 ? true : undefined), 30_000, 'the side effect');
    const before = await delivered();
    await killAndWaitForRestart();
    const cut = await interrupted('plain_note');
    // The job is delivered again after ackWaitMs, and its call made again under the same key answers as it stands.
    await eventually(async () => ((await delivered()) > before ? true : undefined), 30_000, 'the job delivered again');
    assert.equal(times(key), 1, 'not run again by the retry');
    assert.ok((await unsettledJobs()) > 0, 'its job is not settled while the call waits');
    const report = await desk.approve('desk', cut.call_id, { reason: "the parcel shows as shipped in the carrier's records", done: true });
    assert.equal(report.decision, 'done');
    await assert.rejects(
      desk.approve('desk', cut.call_id, { reason: 'again', done: true }),
      { code: 'INVALID_INPUT' },
      'a decision is made once',
    );
    await eventually(settled, 60_000, 'the job settled by the person saying the call took effect');
    assert.equal(times(key), 1, 'marked done, never run again');
  });

  test('a call of a tool whose service honours its key runs again by itself after the crash, under the same key', async () => {
    const key = 'job:support/orders/J-honoured#1';
    await tf.fleet.jobs.publish('support', 'orders', { tool: 'honoured_note', note: 'ship ORD-3' }, { id: 'J-honoured' });
    await eventually(() => (times(key) === 1 ? true : undefined), 30_000, 'the side effect');
    await killAndWaitForRestart();
    await eventually(() => (times(key) === 2 ? true : undefined), 60_000, 'the call run again by itself');
    await eventually(settled, 60_000, 'the job settled');
    assert.equal(times(key), 2, 'once by the crash, once again; the service does it once');
    assert.equal((await tf.fleet.approvals('desk')).length, 0, 'nobody was asked');
  });

  test('a job delivered again after another worker had it: its writes_external call, of which this agent has no record, waits for a person as interrupted and does not run; its read-only call runs', async () => {
    const key = 'job:support/orders/J-elsewhere#1';
    await tf.fleet.stop('desk');
    await tf.fleet.jobs.publish('support', 'orders', { tool: 'plain_note', note: 'ship ORD-4', look: true }, { id: 'J-elsewhere' });
    // Another worker takes the first delivery and is gone without a word: pulled here from the skill's consumer, never acknowledged.
    const config = loadConfig(tf.ws.configPath);
    const names = new FleetNames(config.fleet.name);
    const nc = await natsConnect({ servers: fleetNatsUrl(config), ...asFleetSupervisor(config.dataPath) });
    try {
      const consumer = await jetstream(nc).consumers.get(names.jobStream('support'), names.skillConsumer('orders'));
      const first = await eventually(
        async () => {
          for await (const m of await consumer.fetch({ max_messages: 1, expires: 2000 })) return m;
          return undefined;
        },
        30_000,
        'the first delivery, to the other worker',
      );
      assert.deepEqual([(first.json() as { id: string }).id, first.info.deliveryCount], ['J-elsewhere', 1]);
      await tf.fleet.start('desk');
      // After the queue's ackWaitMs, the job is delivered again, to desk: its call is asked about, or (wrongly) run.
      const waiting = () =>
        tf.fleet.approvals('desk').then((all) => all.find((p) => p.tool === 'plain_note' && p.arguments.note === 'ship ORD-4'));
      await eventually(async () => (times(key) > 0 || (await waiting()) ? true : undefined), 60_000, 'the call asked about, or run');
      assert.equal(times(key), 0, 'the call with side effects did not run');
      const asked = (await waiting())!;
      assert.ok(asked.interrupted_at !== undefined, 'asked about as interrupted: did it take effect?');
      await eventually(() => (times(`look ${key}`) >= 1 ? true : undefined), 30_000, 'the read-only call to run');
      assert.ok((await unsettledJobs()) > 0, 'its job is held while a person decides');
      await desk.approve('desk', asked.call_id, { reason: 'the other worker shipped it: the carrier has the parcel', done: true });
      await eventually(settled, 60_000, 'the job settled by the person saying the call took effect');
      assert.equal(times(key), 0, 'marked done, never run here');
      assert.equal((await tf.fleet.approvals('desk')).length, 0);
    } finally {
      await nc.close();
    }
  });
});
