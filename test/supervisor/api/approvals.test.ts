import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type CallToolResult, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { headers, type MsgHdrs } from '@nats-io/transport-node';

import { type Approver, approver } from '../../../client/approver.js';
import { fleetNatsUrl } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { connectNats, type NatsConnection, permissionViolation } from '../../../shared/nats/nats-connection.js';
import { type NatsIdentity, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { REQUESTER, REQUESTER_HEADER, SupervisorRequester } from '../../../shared/nats/supervisor-requester.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { eventually, runThymos, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

const APPROVAL_TIMEOUT_S = 15;

function domainDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'thymos-approvals-'));
  writeFileSync(
    join(dir, 'desk.pkl'),
    `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents { ["desk"] { persona { name = "Desk" }; capabilities { "refund" } } }
tools {
  ["refund"] {
    description = "Refund an order"
    input { ["order_id"] {} ["amount"] { type = "number"; min = 0 } }
    output { ["refunded"] { type = "number" } }
    sideEffect = "irreversible"
    permission = "confirm"
    idempotencyKey = "refund-{order_id}"
    executor = new Script { path = "desk.mjs"; export = "refund" }
  }
}
`,
  );
  // Each run leaves a line: how many times a refund ran is counted from the file.
  writeFileSync(
    join(dir, 'desk.mjs'),
    `import { appendFileSync } from 'node:fs';
export function refund(input, ctx) {
  appendFileSync(${JSON.stringify(join(dir, 'refunds.log'))}, JSON.stringify({ order: input.order_id, key: ctx.idempotencyKey }) + '\\n');
  return { refunded: input.amount };
}
`,
  );
  return dir;
}

const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
type Pending = { status: string; call_id: string };

describe('confirm tools: a pending call is approved, refused or timed out at the supervisor, also while its agent is Dormant', () => {
  let dir: string;
  let tf: TestFleet;
  let client: Client;
  /** The desk's approver, in this process: the one that calls the desk's tools through `client`. */
  let desk: Approver;
  const updates: string[] = [];
  const refunds = () =>
    existsSync(join(dir, 'refunds.log')) ? readFileSync(join(dir, 'refunds.log'), 'utf8').trim().split('\n').filter(Boolean).length : 0;
  const cli = (...args: string[]) => runThymos([...args, '--config', tf.ws.configPath], tf.ws.dir);
  const record = async (callId: string) =>
    (await call(client, 'get_call', { call_id: callId })).structuredContent as {
      status: string;
      error?: { code: string; message: string };
      decided_by?: string;
      result?: unknown;
    };
  const connectDesk = async () => {
    client = await tf.fleet.agent('desk');
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    await client.subscribeResource({ uri: 'agent://desk/calls' });
  };
  const askRefund = async (order: string) => {
    const r = await call(client, 'refund', { order_id: order, amount: 12.5, reason: `order ${order} arrived broken` });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const pending = r.structuredContent as Pending;
    assert.equal(pending.status, 'pending');
    return pending.call_id;
  };

  before(async () => {
    dir = domainDir();
    // The client's attempts to approve are refused by nats-server, on purpose.
    tf = await startTestFleet(['[tools]', `approval_timeout_s = ${APPROVAL_TIMEOUT_S}`], {
      schema: join(dir, 'desk.pkl'),
      refusals: 'expected',
    });
    await tf.fleet.start('desk');
    await connectDesk();
    desk = await approver(tf.ws.configPath);
  });

  after(async () => {
    await desk?.close();
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a confirm call answers pending at once, runs nothing, and is listed at the supervisor with its caller', async () => {
    const callId = await askRefund('AB-1');
    assert.equal(refunds(), 0);
    const listed = await eventually(
      async () => {
        const all = await tf.fleet.approvals();
        return all.some((p) => p.call_id === callId) ? all : undefined;
      },
      20_000,
      'the call listed at the supervisor',
    );
    const mine = listed.find((p) => p.call_id === callId)!;
    assert.ok(mine, JSON.stringify(listed));
    assert.deepEqual([mine.agent, mine.tool, mine.caller, mine.reason], ['desk', 'refund', REQUESTER, 'order AB-1 arrived broken']);
    assert.deepEqual(await tf.fleet.approvals('desk'), listed);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!tools.some((t) => /approve|refuse/.test(t)), `no approval tool on the agent: ${tools.join(', ')}`);
  });

  test('the client cannot approve, even as another process: nats-server refuses its key where decisions are made, the supervisor refuses a decision on the client’s subject, and the call still waits', async () => {
    const [pending] = await tf.fleet.approvals('desk');
    const config = loadConfig(tf.ws.configPath);
    const names = new FleetNames(config.fleet.name);
    const as = (who: NatsIdentity) =>
      connectNats({ servers: fleetNatsUrl(config), name: `test-${who}`, seed: readNatsSeed(config.dataPath, who)!, who });
    const decision = { id: 'desk', call_id: pending!.call_id, reason: 'a forged approval' };
    const own: NatsConnection[] = [];
    try {
      const clientNc = await as('client');
      own.push(clientNc);
      // What connect() sends, and the approver's requests, each saying it is some other process (Thymos-By is not proof).
      for (const requester of [
        SupervisorRequester.control(clientNc, 10_000, names),
        SupervisorRequester.approver(clientNc, 10_000, names),
      ]) {
        for (const op of ['approve', 'refuse'] as const) {
          await assert.rejects(
            requester.request(op, decision),
            (e: unknown) => isThymosError(e, 'UNAUTHORIZED') && /nats-server refused the publish/.test((e as Error).message),
            `the client's ${op}`,
          );
        }
      }
      for (const subject of [names.approver('approve'), names.supervisor('approve')]) {
        const forged = await clientNc.request(subject, JSON.stringify(decision), { timeout: 5000, headers: forgedBy() }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.equal(
          permissionViolation(forged)?.subject,
          subject,
          `a raw request with the client’s key and a forged Thymos-By on ${subject}: ${String(forged)}`,
        );
      }
      // An agent's key neither: its calls are its own, decisions are not.
      const agentNc = await as('agent-desk');
      own.push(agentNc);
      await assert.rejects(
        SupervisorRequester.approver(agentNc, 10_000, names).request('approve', decision),
        (e: unknown) => isThymosError(e, 'UNAUTHORIZED') && /nats-server refused the publish/.test((e as Error).message),
      );
      // A key that may publish anywhere (the supervisor's), asking on the client's subject: the supervisor itself refuses.
      const anywhere = await as('supervisor');
      own.push(anywhere);
      await assert.rejects(
        SupervisorRequester.control(anywhere, 10_000, names).request('approve', decision),
        (e: unknown) => isThymosError(e, 'UNAUTHORIZED') && /approver/.test((e as Error).message),
      );
    } finally {
      for (const nc of own) await nc.close();
    }
    assert.ok(
      (await desk.approvals('desk')).some((p) => p.call_id === pending!.call_id),
      'the call still waits',
    );
    assert.equal(refunds(), 0, 'nothing ran');
    const audit = readFileSync(join(tf.ws.dir, 'data', 'logs', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { op: string; by: string; result: string });
    assert.ok(
      audit.some((e) => e.op === 'approve' && e.by === 'client' && e.result === 'UNAUTHORIZED'),
      `the refused decision is audited: ${JSON.stringify(audit)}`,
    );
  });

  test('nobody approves their own call; another approver does, once, and the call runs once', async () => {
    const [pending] = await tf.fleet.approvals('desk');
    await assert.rejects(desk.approve('desk', pending!.call_id, { reason: 'mine' }), (e: unknown) => isThymosError(e, 'TOOL_DENIED'));
    const approved = await cli('approve', 'desk', pending!.call_id, '--reason', 'checked the photos', '--json');
    assert.equal(approved.code, 0, approved.stderr);
    assert.deepEqual(JSON.parse(approved.stdout), {
      call_id: pending!.call_id,
      agent: 'desk',
      tool: 'refund',
      decision: 'approved',
      delivered: true,
    });
    const done = await eventually(
      async () => {
        const r = await record(pending!.call_id);
        return r.status === 'ok' ? r : undefined;
      },
      20_000,
      'the approved call run',
    );
    assert.deepEqual(done.result, { refunded: 12.5 });
    assert.match(done.decided_by ?? '', /#\d+@/);
    assert.equal(refunds(), 1);
    await eventually(() => (updates.includes('agent://desk/calls') ? true : undefined), 10_000, 'a calls resource notification');
    const metricsUrl = (await tf.fleet.status()).supervisor.metrics_url;
    await eventually(
      async () =>
        /thymos_tool_calls_total\{agent="desk",tool="refund",status="ok",host="[^"]+"\} 1/.test(await (await fetch(metricsUrl)).text())
          ? true
          : undefined,
      10_000,
      'the call counted in /metrics',
    );
    const again = await cli('approve', 'desk', pending!.call_id, '--reason', 'again');
    assert.equal(again.code, 2, `deciding twice is refused: ${again.stderr}`);
    assert.equal(refunds(), 1, 'nothing ran twice');
    const audit = readFileSync(join(tf.ws.dir, 'data', 'logs', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { op: string; by: string; via?: string; result: string; details?: { call_id?: string } });
    assert.ok(
      audit.some(
        (e) =>
          e.op === 'approve' &&
          e.result === 'ok' &&
          e.details?.call_id === pending!.call_id &&
          e.by === 'approver' &&
          /#\d+@/.test(e.via ?? ''),
      ),
      JSON.stringify(audit),
    );
    assert.ok(
      audit.some((e) => e.op === 'approve' && e.result === 'TOOL_DENIED'),
      'the refused own approval is audited too',
    );
  });

  test('a refused call never runs and its caller finds it refused', async () => {
    const callId = await askRefund('AB-2');
    const refused = await cli('refuse', 'desk', callId, '--reason', 'over the limit');
    assert.equal(refused.code, 0, refused.stderr);
    const r = await eventually(
      async () => {
        const x = await record(callId);
        return x.status === 'refused' ? x : undefined;
      },
      20_000,
      'the refusal',
    );
    assert.equal(r.error?.code, 'TOOL_DENIED');
    assert.match(r.error!.message, /over the limit/);
    assert.equal(refunds(), 1);
  });

  test('a call pending when its agent stops survives; decided while Dormant, it runs when the agent wakes', async () => {
    const callId = await askRefund('AB-3');
    await tf.fleet.stop('desk');
    const listed = await cli('approvals', 'desk');
    assert.match(listed.stdout, new RegExp(callId));
    const approved = await cli('approve', 'desk', callId, '--reason', 'fine', '--json');
    assert.equal(approved.code, 0, approved.stderr);
    assert.equal((JSON.parse(approved.stdout) as { delivered: boolean }).delivered, false);
    assert.equal(refunds(), 1);
    await tf.fleet.start('desk');
    await connectDesk();
    await eventually(async () => ((await record(callId)).status === 'ok' ? true : undefined), 20_000, 'the call run after the wake');
    assert.equal(refunds(), 2);
  });

  test('a call nobody decides is refused at its deadline, counted while the agent is Dormant', async () => {
    const callId = await askRefund('AB-4');
    await tf.fleet.stop('desk');
    await eventually(
      async () => ((await tf.fleet.approvals('desk')).length === 0 ? true : undefined),
      (APPROVAL_TIMEOUT_S + 20) * 1000,
      'the deadline',
    );
    await tf.fleet.start('desk');
    await connectDesk();
    const r = await eventually(
      async () => {
        const x = await record(callId);
        return x.status === 'refused' ? x : undefined;
      },
      20_000,
      'the timed-out refusal',
    );
    assert.match(r.error!.message, /approval_timeout_s/);
    assert.equal(refunds(), 2);
  });
});

/** Headers that say the request comes from another process than the one sending it. */
function forgedBy(): MsgHdrs {
  const h = headers();
  h.set(REQUESTER_HEADER, 'approver-console#1@elsewhere');
  return h;
}
