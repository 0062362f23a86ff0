import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';

import type { Fleet } from '../../../client/fleet-client.js';
import { readFleetInfo } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { asFleetSupervisor, eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { inboxAsking } from '../../helpers/fuzz.js';

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content.map((c) => c.text).join('\n');

describe('a fleet named by [fleet] name', () => {
  let testFleet: TestFleet | undefined;
  let fleet: Fleet;
  let nc: NatsConnection;

  before(async () => {
    testFleet = await startTestFleet(['[fleet]', 'name = "north"', '[lifecycle]', 'min_dwell_ms = 0']);
    fleet = testFleet.fleet;
    const info = readFleetInfo(loadConfig(testFleet.ws.configPath));
    nc = await natsConnect({ servers: info!.nats_url, ...asFleetSupervisor(loadConfig(testFleet.ws.configPath).dataPath) });
  });

  after(async () => {
    await nc?.close();
    await testFleet?.dispose();
  });

  test('its supervisor, agents, events and world use north.* subjects and NORTH_* streams, and nothing answers on thymos.*', async () => {
    const report = await fleet.reconcile({ agents: { tomas_innkeeper: { relevance: 1 } } });
    assert.deepEqual(report.started, ['tomas_innkeeper']);

    // Answered on an inbox that names the agent asked, where alone it may answer.
    const control = (
      await nc.request('north.agent.tomas_innkeeper.control', JSON.stringify({ op: 'get_state' }), {
        timeout: 5000,
        noMux: true,
        reply: inboxAsking('north.agent.tomas_innkeeper.control'),
      })
    ).json<{ ok: boolean; state: { id: string } }>();
    assert.equal(control.ok, true);
    assert.equal(control.state.id, 'tomas_innkeeper');
    for (const subject of ['thymos.supervisor.ping', 'thymos.agent.tomas_innkeeper.control', 'thymos.world.tables']) {
      await assert.rejects(nc.request(subject, '{}', { timeout: 2000 }), /no responders|503/i, subject);
    }

    const jsm = await jetstreamManager(nc);
    const streams = (await jsm.streams.names().next()).sort();
    assert.deepEqual(streams, ['NORTH_EVENTS', 'NORTH_HEARD', 'NORTH_INBOX']);
    assert.deepEqual((await jsm.streams.info('NORTH_HEARD')).config.subjects, ['north.agent.*.heard']);
    assert.deepEqual((await jsm.streams.info('NORTH_EVENTS')).config.subjects, ['north.events.>', 'north.agent.*.events.>']);
    assert.deepEqual((await jsm.streams.info('NORTH_INBOX')).config.subjects, ['north.agent.*.inbox.*']);

    const agent = await fleet.agent('tomas_innkeeper');
    await fleet.publish({ type: 'tavern.brawl', location: 'tavern', payload: { summary: 'A brawl broke out by the northern hearth' } });
    await eventually(
      async () =>
        /northern hearth/.test(
          text(await agent.callTool({ name: 'query_tomas_innkeeper_knowledge', arguments: { query: 'brawl northern hearth' } })),
        )
          ? true
          : undefined,
      20_000,
      'the agent heard the event on north.events.*',
    );

    const tables = await fleet.world.tables();
    assert.ok(Object.keys(tables).length > 0, 'the world store answers on north.world.*');
  });
});
