import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect, type NatsConnection, nkeyAuthenticator } from '@nats-io/transport-node';
import { pino } from 'pino';
import { z } from 'zod';

import { readFleetInfo } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { ErrorCode, ThymosError } from '../../../shared/errors/errors.js';
import { codedRequest } from '../../../shared/nats/coded-request.js';
import { connectNats, logRefusals, permissionViolation } from '../../../shared/nats/nats-connection.js';
import { type NatsIdentity, natsInboxPrefix, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { SupervisorRequester } from '../../../shared/nats/supervisor-requester.js';
import { WorldClient } from '../../../shared/nats/world-client.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { connectAs as connectAsIdentity, refusedOn } from '../../helpers/nats-as.js';

/**
 * What nats-server refuses each of the fleet's identities (README: "Who may connect to the
 * fleet's NATS"): every refusal here is the server's, on a real fleet, with real keys.
 */
describe('what each identity may do on a fleet’s managed nats-server', () => {
  let testFleet: TestFleet | undefined;
  let data: string;
  let url: string;
  let names: FleetNames;
  const open: NatsConnection[] = [];

  before(async () => {
    testFleet = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'pool_size = 0'], { refusals: 'expected' });
    const config = loadConfig(testFleet.ws.configPath);
    data = config.dataPath;
    url = readFleetInfo(config)!.nats_url;
    names = new FleetNames(config.fleet.name);
    // The agents' durable consumers exist once the supervisor registered them; elder_rowan runs, so its identity is in use too.
    const report = await testFleet.fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
  });

  after(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    await testFleet?.dispose();
  });

  const connectAs = (who: NatsIdentity) => connectAsIdentity(url, data, who, open);

  /** A request refused by nats-server: rejected with its permission violation, not a timeout. */
  const requestRefused = async (nc: NatsConnection, subject: string, body = '') => {
    const err = await nc.request(subject, body, { timeout: 5000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const violation = permissionViolation(err);
    assert.ok(violation, `${subject}: expected a permission violation, got ${String(err)}`);
    assert.equal(violation.subject, subject);
    assert.equal(violation.operation, 'publish');
  };

  test('an agent may not speak for another: its control, status and decisions, or answer what is asked of it', async () => {
    const { nc, refused } = await connectAs('agent-elder_rowan');
    await requestRefused(nc, names.agentControl('mira_herbalist'), JSON.stringify({ op: 'shutdown' }));
    nc.publish(names.agentStatus('mira_herbalist'), JSON.stringify({ type: 'heartbeat' }));
    await refusedOn(refused, 'publish', names.agentStatus('mira_herbalist'));
    nc.publish(names.agentDecision('mira_herbalist'), '{}');
    await refusedOn(refused, 'publish', names.agentDecision('mira_herbalist'));
    nc.subscribe(names.agentControl('mira_herbalist'));
    await refusedOn(refused, 'subscription', names.agentControl('mira_herbalist'));
    nc.subscribe(names.agentAsk('mira_herbalist', '*'));
    await refusedOn(refused, 'subscription', names.agentAsk('mira_herbalist', '*'));
    // Nor speak to another agent in a third one's name: messages and questions go on subjects that end in the sender's id.
    nc.publish(names.agentInbox('mira_herbalist', 'tomas_innkeeper'), '{}');
    await refusedOn(refused, 'publish', names.agentInbox('mira_herbalist', 'tomas_innkeeper'));
    await requestRefused(nc, names.agentAsk('tomas_innkeeper', 'mira_herbalist'), '{}');
    // Nor write into its own inbox (a stream it reads), even as itself.
    nc.publish(names.agentInbox('elder_rowan', 'elder_rowan'), '{}');
    await refusedOn(refused, 'publish', names.agentInbox('elder_rowan', 'elder_rowan'));
    // Events likewise: on its own subject only, not the client's nor another agent's.
    for (const subject of [names.event('rumour'), names.agentEvent('mira_herbalist', 'rumour')]) {
      nc.publish(subject, '{}');
      await refusedOn(refused, 'publish', subject);
    }
    // Nor forge what the world store tells another's live query.
    nc.publish(names.worldLive('anything'), '{}');
    await refusedOn(refused, 'publish', names.worldLive('anything'));
    // Nor drive the supervisor beyond the two calls an agent makes.
    await requestRefused(nc, names.supervisor('stop'), JSON.stringify({ id: 'mira_herbalist' }));
  });

  test('an agent may not read replies meant for another, or anyone’s but its own', async () => {
    const { nc, refused } = await connectAs('agent-elder_rowan');
    for (const inbox of [
      `${natsInboxPrefix('agent-mira_herbalist')}.>`,
      `${natsInboxPrefix('supervisor')}.>`,
      `${natsInboxPrefix('client')}.>`,
      '_INBOX.>',
      '>',
    ]) {
      nc.subscribe(inbox);
      await refusedOn(refused, 'subscription', inbox);
    }
    // Its own are what its requests are answered on (here, the supervisor's as the agent calls it).
    const reply = await nc.request(names.agentSupervisor('elder_rowan', 'ping'), '{}', { timeout: 10_000 });
    assert.ok(reply.subject.startsWith(`${natsInboxPrefix('agent-elder_rowan')}.`), reply.subject);
    assert.equal((JSON.parse(reply.string()) as { ok: boolean }).ok, true);
    // Nor send control to itself: that is the supervisor's.
    await requestRefused(nc, names.agentControl('elder_rowan'), JSON.stringify({ op: 'shutdown' }));
  });

  test('an agent may reach JetStream only for its own consumers: another’s, a consumer of its own with another’s filter, and the streams are refused', async () => {
    const { nc } = await connectAs('agent-elder_rowan');
    const own = JSON.parse(
      (
        await nc.request(`$JS.API.CONSUMER.INFO.${names.heardStream}.${names.heardConsumer('elder_rowan')}`, '', { timeout: 10_000 })
      ).string(),
    ) as { name?: string };
    assert.equal(own.name, names.heardConsumer('elder_rowan'), 'its own consumer it may look up');
    await requestRefused(nc, `$JS.API.CONSUMER.INFO.${names.heardStream}.${names.heardConsumer('mira_herbalist')}`);
    await requestRefused(
      nc,
      `$JS.API.CONSUMER.MSG.NEXT.${names.inboxStream}.${names.inboxConsumer('mira_herbalist')}`,
      JSON.stringify({ batch: 1 }),
    );
    await requestRefused(nc, `$JS.API.CONSUMER.DELETE.${names.heardStream}.${names.heardConsumer('elder_rowan')}`);
    await requestRefused(
      nc,
      `$JS.API.CONSUMER.CREATE.${names.heardStream}.${names.heardConsumer('elder_rowan')}.${names.agentHeard('mira_herbalist')}`,
      '{}',
    );
    await requestRefused(nc, `$JS.API.STREAM.PURGE.${names.eventStream}`);
    await requestRefused(nc, `$JS.API.STREAM.MSG.GET.${names.inboxStream}`, JSON.stringify({ seq: 1 }));
  });

  test('a spare of the pool is nobody until its claim: no agent’s subjects, no events', async () => {
    const { nc, refused } = await connectAs('spare');
    nc.subscribe(names.agentControl('elder_rowan'));
    await refusedOn(refused, 'subscription', names.agentControl('elder_rowan'));
    nc.publish(names.event('rumour'), '{}');
    await refusedOn(refused, 'publish', names.event('rumour'));
    await requestRefused(nc, names.world('get'), '{}');
  });

  test('the client drives the fleet through the supervisor only: not an agent, not JetStream’s API, not dead letters', async () => {
    const { nc, refused } = await connectAs('client');
    await requestRefused(nc, names.agentControl('elder_rowan'), JSON.stringify({ op: 'shutdown' }));
    await requestRefused(nc, `$JS.API.STREAM.DELETE.${names.eventStream}`);
    nc.publish(names.deadLetters('any'), '{}');
    await refusedOn(refused, 'publish', names.deadLetters('any'));
    nc.subscribe(names.agentControl('elder_rowan'));
    await refusedOn(refused, 'subscription', names.agentControl('elder_rowan'));
    // Nor decide what waits for approval: not where the approver asks, nor on its own old subjects.
    for (const subject of [names.approver('approve'), names.approver('refuse'), names.supervisor('approve'), names.supervisor('refuse')])
      await requestRefused(nc, subject, JSON.stringify({ id: 'elder_rowan', call_id: 'c-1', reason: 'forged' }));
    // What it may: the supervisor's API, answered on its own inboxes, listing approvals included.
    const status = await testFleet!.fleet.status();
    assert.equal(status.agents.find((a) => a.id === 'elder_rowan')?.state, 'active');
    assert.deepEqual(await testFleet!.fleet.approvals(), []);
  });

  test('the approver decides approvals and does nothing else: not the supervisor’s other ops, not the world, not events, not another’s replies', async () => {
    const { nc, refused } = await connectAs('approver');
    const asApprover = SupervisorRequester.approver(nc, 10_000, names);
    assert.deepEqual(await asApprover.request('approvals', {}), { calls: [], next: null });
    // Served as the approver's: an unknown call is the supervisor's NOT_FOUND, not a refusal.
    await assert.rejects(
      asApprover.request('approve', { id: 'elder_rowan', call_id: 'c-none', reason: 'checked' }),
      (e: unknown) => e instanceof ThymosError && e.code === ErrorCode.NOT_FOUND,
    );
    await requestRefused(nc, names.supervisor('stop'), JSON.stringify({ id: 'elder_rowan' }));
    await requestRefused(nc, names.supervisor('approvals'), '{}');
    await requestRefused(nc, names.world('get'), '{}');
    nc.publish(names.event('rumour'), '{}');
    await refusedOn(refused, 'publish', names.event('rumour'));
    nc.subscribe(`${natsInboxPrefix('client')}.>`);
    await refusedOn(refused, 'subscription', `${natsInboxPrefix('client')}.>`);
  });

  test('the world store knows which agent asks from where it asks: an agent writes and subscribes as itself only, and ends only its own subscriptions', async () => {
    const { nc } = await connectAs('agent-elder_rowan');
    // Not the client's subjects, nor another agent's.
    await requestRefused(nc, names.world('set'), '{}');
    await requestRefused(nc, names.agentWorld('mira_herbalist', 'set'), '{}');
    const own = new WorldClient(nc, { timeoutMs: 10_000, by: 'elder_rowan', owner: 'elder_rowan', names, agent: 'elder_rowan' });
    assert.equal((await own.set('place', 'mill', { name: 'The mill', danger: 0 })).updated_by, 'elder_rowan');
    const posing = new WorldClient(nc, { timeoutMs: 10_000, by: 'mira_herbalist', owner: 'mira_herbalist', names, agent: 'elder_rowan' });
    await assert.rejects(posing.set('place', 'mill', { name: 'The mill', danger: 9 }), (e: unknown) => unauthorizedAt(e, 'by'));
    await assert.rejects(
      posing.subscribe({ table: 'place' }, () => undefined),
      (e: unknown) => unauthorizedAt(e, 'owner'),
    );
    assert.equal((await own.get('place', 'mill'))?.danger, 0, 'the refused write changed nothing');
    const sub = await own.subscribe({ table: 'place' }, () => undefined);
    const mira = await connectAs('agent-mira_herbalist');
    const asMira = SupervisorRequester.world(mira.nc, 10_000, names, 'mira_herbalist');
    assert.deepEqual(
      await asMira.request('renew', { subs: [sub.sub] }),
      { unknown: [sub.sub] },
      'another agent’s subscription is not hers to renew',
    );
    assert.deepEqual(await asMira.request('unsubscribe', { sub: sub.sub }), { ended: false }, 'nor to end');
    const asElder = SupervisorRequester.world(nc, 10_000, names, 'elder_rowan');
    assert.deepEqual(await asElder.request('renew', { subs: [sub.sub] }), { unknown: [] });
    await sub.close();
  });

  test('an agent submits only its own calls for approval, and only on its own subject', async () => {
    const { nc } = await connectAs('agent-elder_rowan');
    const now = Date.now();
    const call = {
      call_id: 'c-forged',
      agent: 'mira_herbalist',
      tool: 'post_quest',
      arguments: {},
      caller: 'agent:elder_rowan',
      requested_at: new Date(now).toISOString(),
      expires_at: new Date(now + 60_000).toISOString(),
    };
    await assert.rejects(SupervisorRequester.control(nc, 10_000, names, 'elder_rowan').request('call_pending', { call }), (e: unknown) =>
      unauthorizedAt(e, 'call.agent'),
    );
    await requestRefused(nc, names.supervisor('call_pending'), JSON.stringify({ call }));
    assert.deepEqual(await testFleet!.fleet.approvals('mira_herbalist'), [], 'nothing waits for approval in her name');
  });

  test('nobody can make another process publish for them: a message gives no right to publish on its reply subject, and no service answers where it was not asked from', async () => {
    const elder = await connectAs('agent-elder_rowan');
    // A message to itself, with another agent's control as its reply, gives it no right to publish there.
    const own = elder.nc.subscribe(names.agentStatus('elder_rowan'), { max: 1 });
    elder.nc.publish(names.agentStatus('elder_rowan'), '{}', { reply: names.agentControl('mira_herbalist') });
    for await (const m of own) assert.equal(m.reply, names.agentControl('mira_herbalist'));
    elder.nc.publish(names.agentControl('mira_herbalist'), JSON.stringify({ op: 'shutdown' }));
    await refusedOn(elder.refused, 'publish', names.agentControl('mira_herbalist'));
    // A message waits in mira_herbalist's inbox (she is not running).
    const admin = await natsConnect({
      servers: url,
      authenticator: nkeyAuthenticator(readNatsSeed(data, 'supervisor')!),
      maxReconnectAttempts: 0,
    });
    open.push(admin);
    await jetstream(elder.nc).publish(names.agentInbox('mira_herbalist', 'elder_rowan'), JSON.stringify({ note: 'kept' }));
    const jsm = await jetstreamManager(admin);
    const waiting = (await jsm.streams.info(names.inboxStream)).state.messages;
    assert.ok(waiting >= 1);
    // A request whose reply names JetStream's API (to have the supervisor's answer purge a stream) is not answered.
    const client = await connectAs('client');
    client.nc.publish(names.supervisor('ping'), '', { reply: `$JS.API.STREAM.PURGE.${names.inboxStream}` });
    await testFleet!.fleet.status();
    assert.equal((await jsm.streams.info(names.inboxStream)).state.messages, waiting, 'nothing purged');
    // A message on the supervisor's API with JetStream's reply (one a pull aimed there) or none is not acted on.
    admin.publish(names.supervisor('stop'), JSON.stringify({ id: 'elder_rowan' }), {
      reply: `$JS.ACK.${names.inboxStream}.${names.inboxConsumer('elder_rowan')}.1.1.1.1.0`,
    });
    admin.publish(names.supervisor('stop'), JSON.stringify({ id: 'elder_rowan' }));
    await testFleet!.fleet.stop('tomas_innkeeper');
    assert.equal(
      (await testFleet!.fleet.status()).agents.find((a) => a.id === 'elder_rowan')?.state,
      'active',
      'elder_rowan was not stopped',
    );
  });

  test('a refused request is UNAUTHORIZED naming the subject, and the refusal is logged by the process it was told to', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const nc = await connectNats({
      servers: url,
      name: 'refused',
      seed: readNatsSeed(data, 'agent-elder_rowan')!,
      who: 'agent-elder_rowan',
    });
    open.push(nc);
    logRefusals(nc, logger, 'agent-elder_rowan');
    const err = await codedRequest(nc, names.supervisor('stop'), { id: 'mira_herbalist' }, z.unknown(), {
      unanswered: () => new ThymosError(ErrorCode.TIMEOUT, 'unanswered'),
      timeoutMs: 5000,
      asked: 'supervisor',
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ThymosError && err.code === ErrorCode.UNAUTHORIZED, String(err));
    assert.match(err.message, new RegExp(names.supervisor('stop').replaceAll('.', '\\.')));
    nc.publish(names.agentStatus('mira_herbalist'), '{}');
    const logged = await eventually(
      () => lines.find((l) => l.subject === names.agentStatus('mira_herbalist')),
      10_000,
      'the refusal logged',
    );
    assert.equal(logged.code, ErrorCode.UNAUTHORIZED);
    assert.equal(logged.operation, 'publish');
    assert.match(String(logged.msg), /nats-server refused agent-elder_rowan a publish/);
  });
});

/** An UNAUTHORIZED error located at `path`. */
function unauthorizedAt(e: unknown, path: string): boolean {
  return e instanceof ThymosError && e.code === ErrorCode.UNAUTHORIZED && e.location?.path === path;
}
