import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { type Approver, approver } from '../../../client/approver.js';
import { fleetNatsUrl } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { agentIdentity, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { SupervisorRequester } from '../../../shared/nats/supervisor-requester.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import type { PendingCall } from '../../../shared/protocol/pending-call.js';
import type { SupervisorResultSchemas } from '../../../shared/protocol/supervisor-protocol.js';
import { eventually, runThymos, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

const MAX_PENDING = 20;

/**
 * What an agent hands the supervisor for approval is held to the limits the docs state, whatever
 * the agent writes in it: at most 64 KiB of arguments, at most `max_pending` calls waiting, and a
 * list of them that reaches whoever asks, however much they weigh. The agents here are played by
 * connections with their own NATS keys, as a rogue agent would hand calls in.
 */
describe('the limits of calls waiting for approval, at the supervisor', () => {
  let tf: TestFleet;
  let desk: Approver;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-approval-limits-'));
  const own: NatsConnection[] = [];
  let n = 0;
  const call = (agent: string, extra: Partial<PendingCall> = {}): PendingCall => ({
    call_id: `limit-${++n}`,
    agent,
    tool: 'refund',
    arguments: { order_id: `AB-${n}` },
    reason: 'the order arrived broken',
    caller: 'game.ts#1@host',
    requested_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + 300_000).toISOString(),
    ...extra,
  });
  const asAgent = new Map<string, SupervisorRequester<typeof SupervisorResultSchemas>>();
  /** Hands `c` in as its agent, on the agent's own subject, with the agent's key. */
  const handIn = async (c: PendingCall) => {
    let requester = asAgent.get(c.agent);
    if (!requester) {
      const config = loadConfig(tf.ws.configPath);
      const who = agentIdentity(c.agent);
      const nc = await connectNats({
        servers: fleetNatsUrl(config),
        name: `test-${c.agent}`,
        seed: readNatsSeed(config.dataPath, who)!,
        who,
      });
      own.push(nc);
      requester = SupervisorRequester.control(nc, 10_000, new FleetNames(config.fleet.name), c.agent);
      asAgent.set(c.agent, requester);
    }
    return requester.request('call_pending', { call: c });
  };

  before(async () => {
    writeFileSync(
      join(dir, 'desk.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents { ["desk"] { persona { name = "Desk" } } ["clerk"] { persona { name = "Clerk" } } ["porter"] { persona { name = "Porter" } } }
`,
    );
    tf = await startTestFleet(['[tools]', `max_pending = ${MAX_PENDING}`, 'approval_timeout_s = 600'], { schema: join(dir, 'desk.pkl') });
    desk = await approver(tf.ws.configPath);
  });
  after(async () => {
    for (const nc of own) await nc.close();
    await desk?.close();
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a call with more than 64 KiB of arguments, a reason past 2,000 characters or a caller past 256 is refused by the supervisor, naming what was expected', async () => {
    const refused = async (c: PendingCall, field: string, expected: RegExp) =>
      assert.rejects(
        handIn(c),
        (e: unknown) => isThymosError(e, 'INVALID_INPUT') && new RegExp(`call\\.${field}: ${expected.source}`).test(e.message),
        field,
      );
    await refused(call('desk', { arguments: { note: 'x'.repeat(70_000) } }), 'arguments', /expected at most 65536 bytes of JSON/);
    await refused(call('desk', { reason: 'r'.repeat(2001) }), 'reason', /.*2000/);
    await refused(call('desk', { caller: 'c'.repeat(300) }), 'caller', /.*256/);
    assert.deepEqual(await desk.approvals('desk'), [], 'none of them waits');
  });

  test('calls handed in past their deadline are refused, yet hold their places: the agent cannot have more than max_pending calls at once by writing deadlines in the past', async () => {
    const past = { requested_at: new Date(Date.now() - 120_000).toISOString(), expires_at: new Date(Date.now() - 60_000).toISOString() };
    for (let i = 0; i < MAX_PENDING; i++) assert.deepEqual(await handIn(call('clerk', past)), { decision: null });
    await eventually(async () => ((await desk.approvals('clerk')).length === 0 ? true : undefined), 30_000, 'the sweep to refuse them');
    await assert.rejects(
      handIn(call('clerk')),
      (e: unknown) => isThymosError(e, 'INVALID_INPUT') && /max_pending/.test(e.message),
      'one more call, with an honest deadline',
    );
    assert.deepEqual(await desk.approvals('clerk'), []);
  });

  test('twenty calls of 60 KiB wait at once: the client, the approver and thymos approvals list every one, whole', async () => {
    const note = 'n'.repeat(60_000);
    const handed = Array.from({ length: 20 }, () => call('porter', { arguments: { note } }));
    for (const c of handed) await handIn(c);
    const ids = handed.map((c) => c.call_id).sort();
    const whole = (listed: PendingCall[]) => {
      assert.deepEqual(listed.map((p) => p.call_id).sort(), ids);
      assert.ok(
        listed.every((p) => p.arguments.note === note),
        'every call whole',
      );
    };
    whole(await tf.fleet.approvals('porter'));
    whole((await desk.approvals()).filter((p) => p.agent === 'porter'));
    const cli = (...args: string[]) => runThymos([...args, '--config', tf.ws.configPath], tf.ws.dir);
    const json = await cli('approvals', 'porter', '--json');
    assert.equal(json.code, 0, json.stderr);
    whole(JSON.parse(json.stdout) as PendingCall[]);
    const table = await cli('approvals');
    assert.equal(table.code, 0, table.stderr);
    for (const id of ids) assert.ok(table.stdout.includes(id), `${id} in the table`);
  });
});
