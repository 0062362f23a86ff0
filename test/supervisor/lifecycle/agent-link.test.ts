import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { connect, type NatsConnection } from '@nats-io/transport-node';

import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { AgentLink } from '../../../supervisor/lifecycle/agent-link.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

let server: TestNatsServer;
let nc: NatsConnection;
const names = new FleetNames('thymos');

before(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});

after(async () => {
  await nc?.close();
  await server?.stop();
});

const notice = (kind: string, token?: number) =>
  JSON.stringify({
    kind,
    ts: new Date().toISOString(),
    state: {
      ...{ id: 'mira', name: 'Mira', defined: true, mode: 'active', status: 'ready', pid: 4242, port: 4100 },
      ...{ started_at: new Date().toISOString(), nats: 'connected', memory_count: 0, conversations: 0, last_snapshot_at: null },
    },
    ...(token === undefined ? {} : { token }),
  });

test("a start under a claim token waits for a notice that names it: an older copy's notices, or one without a token, are not this start's", async () => {
  const link = new AgentLink(nc, names);
  const life = link.waitForLife('mira', 10_000, 7);
  nc.publish(names.agentStatus('mira'), notice('heartbeat', 6));
  nc.publish(names.agentStatus('mira'), notice('ready'));
  nc.publish(names.agentStatus('mira'), notice('ready', 7));
  const seen = await life.seen;
  assert.equal(seen.token, 7);
  assert.equal(seen.kind, 'ready');
});

test('without a token the first ready or heartbeat notice is taken; none in time is STARTUP_TIMEOUT', async () => {
  const link = new AgentLink(nc, names);
  const life = link.waitForLife('bram', 10_000);
  nc.publish(names.agentStatus('bram'), notice('heartbeat', 3));
  assert.equal((await life.seen).token, 3);
  const waiting = link.waitForLife('bram', 300, 9);
  nc.publish(names.agentStatus('bram'), notice('ready', 8));
  await assert.rejects(waiting.seen, (err: Error & { code?: string }) => err.code === 'STARTUP_TIMEOUT');
});
