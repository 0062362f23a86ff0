import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect, type NatsConnection, type Subscription } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../client/fleet-client.js';
import { configFromObject } from '../../shared/config/thymos-config.js';
import { ErrorCode, isThymosError } from '../../shared/errors/errors.js';
import { ensureEventStream } from '../../shared/nats/event-stream.js';
import { FleetNames } from '../../shared/protocol/fleet-names.js';
import { eventually } from '../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../helpers/nats-server.js';

/**
 * The library's side of the wire, against a real nats-server: what a game loop gets when
 * the answer on a subject is not what this version of Thymos sends. The answers come from a
 * plain NATS responder standing where a supervisor of another version (or a broken one) would.
 */
describe('the fleet client', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  let fleet: Fleet;
  let north: Fleet;
  const subs: Subscription[] = [];

  /** Answers every request on `subject` with `reply` (raw text). */
  const answer = async (subject: string, reply: string) => {
    subs.push(nc.subscribe(subject, { callback: (_err, msg) => void msg.respond(reply) }));
    await nc.flush();
  };

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    nc = await natsConnect({ servers: nats.url });
    fleet = await connect(configFromObject({ nats: { url: nats.url }, supervisor: { request_timeout_ms: 3000 } }));
    north = await connect(
      configFromObject({ nats: { url: nats.url }, fleet: { name: 'north' }, supervisor: { request_timeout_ms: 3000 } }),
    );
  });

  after(async () => {
    for (const s of subs) s.unsubscribe();
    await fleet?.close();
    await north?.close();
    await nc?.close();
    await nats?.stop();
  });

  test('with no supervisor, a request is FLEET_NOT_RUNNING naming the subject', async () => {
    await assert.rejects(
      fleet.status(),
      (e) => isThymosError(e, ErrorCode.FLEET_NOT_RUNNING) && /thymos\.supervisor\.status/.test(e.message),
    );
  });

  test('a reply that does not match the result schema is INVALID_REPLY naming the subject and the bad path', async () => {
    await answer('thymos.supervisor.status', JSON.stringify({ ok: true, result: { supervisor: { pid: 'one' }, counts: {}, agents: [] } }));
    await assert.rejects(
      fleet.status(),
      (e) => isThymosError(e, ErrorCode.INVALID_REPLY) && /thymos\.supervisor\.status/.test(e.message) && /supervisor\.pid/.test(e.message),
    );
  });

  test('a reply that is not JSON, or neither ok nor a coded error, is INVALID_REPLY', async () => {
    await answer('thymos.supervisor.history', 'this is not json');
    await assert.rejects(
      fleet.history('elder_rowan'),
      (e) => isThymosError(e, ErrorCode.INVALID_REPLY) && /thymos\.supervisor\.history/.test(e.message),
    );
    await answer('thymos.world.tables', JSON.stringify({ result: {} }));
    await assert.rejects(fleet.world.tables(), (e) => isThymosError(e, ErrorCode.INVALID_REPLY) && /thymos\.world\.tables/.test(e.message));
    await answer('thymos.world.get', JSON.stringify({ ok: false, error: { code: 'NO_SUCH_CODE', message: 'x' } }));
    await assert.rejects(fleet.world.get('quest', 'q1'), (e) => isThymosError(e, ErrorCode.INVALID_REPLY) && /error: code/.test(e.message));
  });

  test("a coded error reply is thrown with the supervisor's code, message and location", async () => {
    await answer(
      'thymos.supervisor.start',
      JSON.stringify({ ok: false, error: { code: 'AGENT_NOT_FOUND', message: 'no agent "nobody"', location: { path: 'id' } } }),
    );
    await answer('thymos.supervisor.ping', JSON.stringify({ ok: true, result: { pid: 1, started_at: new Date().toISOString() } }));
    await assert.rejects(
      fleet.start('nobody'),
      (e) => isThymosError(e, ErrorCode.AGENT_NOT_FOUND) && e.message === 'no agent "nobody"' && e.location?.path === 'id',
    );
  });

  test('a valid reply comes back typed and validated: rows keep their own fields', async () => {
    const row = { id: 'q1', updated_at: 1, updated_by: 'app', title: 'Wolves at the mill' };
    await answer('thymos.world.query', JSON.stringify({ ok: true, result: [row] }));
    assert.deepEqual(await fleet.world.query({ table: 'quest' }), [row]);
  });

  test("a decision is passed on only when it names the agent whose subject it came on: another agent's name is forged", async () => {
    const decision = (agent: string, action: string) =>
      JSON.stringify({
        ...{ agent, event: 'e1', heard: 'wolves at the mill', action, confidence: 0.9, reason: 'r', steps: [], options: [] },
        ...{ model: 'offline', memory: 'm1' },
      });
    const every: string[] = [];
    const mira: string[] = [];
    const all = fleet.decisions((d) => every.push(`${d.agent} ${d.action}`));
    const one = fleet.decisions((d) => mira.push(`${d.agent} ${d.action}`), { agent: 'mira' });
    try {
      // The client's subscriptions are on its own connection: a decision both hear says they are in place.
      await eventually(
        () => {
          nc.publish('thymos.agent.mira.decision', decision('mira', 'probe'));
          return every.length > 0 && mira.length > 0 ? true : undefined;
        },
        10_000,
        'the subscriptions in place',
      );
      // mira's subject, written as though bram decided: in order before mira's own.
      nc.publish('thymos.agent.mira.decision', decision('bram_smith', 'forged'));
      nc.publish('thymos.agent.mira.decision', decision('mira', 'gather herbs'));
      const heard = (list: string[]) => list.filter((d) => d !== 'mira probe');
      await eventually(() => (heard(every).length > 0 && heard(mira).length > 0 ? true : undefined), 10_000, "mira's decision heard");
      assert.deepEqual(heard(every), ['mira gather herbs']);
      assert.deepEqual(heard(mira), ['mira gather herbs']);
    } finally {
      all.close();
      one.close();
    }
  });

  test('[fleet] name moves every request, event and decision to that fleet’s subjects and streams', async () => {
    await answer('north.supervisor.history', JSON.stringify({ ok: true, result: [] }));
    assert.deepEqual(await north.history('elder_rowan'), []);
    await assert.rejects(
      north.status(),
      (e) => isThymosError(e, ErrorCode.FLEET_NOT_RUNNING) && /north\.supervisor\.status/.test(e.message),
    );

    await ensureEventStream(nc, configFromObject({}).events, new FleetNames('north'));
    const { seq } = await north.publish({ type: 'wolves.seen', location: 'mill', payload: {} });
    const jsm = await jetstreamManager(nc);
    const stored = await jsm.streams.getMessage('NORTH_EVENTS', { seq });
    assert.equal(stored?.subject, 'north.events.wolves.seen');
    await assert.rejects(
      fleet.publish({ type: 'wolves.seen', payload: {} }),
      (e) => isThymosError(e, ErrorCode.NATS_UNAVAILABLE),
      'the default fleet has no stream on this server',
    );
  });
});
