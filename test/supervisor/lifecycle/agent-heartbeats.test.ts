import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { connect, type NatsConnection } from '@nats-io/transport-node';

import { parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { AgentStatusMessageSchema } from '../../../shared/protocol/agent-protocol.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { AgentHeartbeats, grantedToolNames } from '../../../supervisor/lifecycle/agent-heartbeats.js';
import { SupervisorMetrics } from '../../../supervisor/metrics/supervisor-metrics.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

let server: TestNatsServer;
let nc: NatsConnection;
const names = new FleetNames('thymos');
const tool = { description: 'a tool', sideEffect: 'read_only', executor: { kind: 'http', url: 'http://127.0.0.1:8787/x' } };
const domain = parseDomainSchema({
  agents: { mira: { persona: { name: 'Mira' }, capabilities: ['lookup_order'] }, bram: { persona: { name: 'Bram' } } },
  tools: { lookup_order: tool, refund: tool },
});

before(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});

after(async () => {
  await nc?.close();
  await server?.stop();
});

const startedAt = new Date().toISOString();
const heartbeat = (id: string, calls: Array<{ tool: string; status: string; count: number }>) =>
  JSON.stringify({
    kind: 'heartbeat',
    ts: new Date().toISOString(),
    state: {
      ...{ id, name: id, defined: true, mode: 'active', status: 'ready', pid: 4242, port: 4100 },
      ...{ started_at: startedAt, nats: 'connected', memory_count: 0, conversations: 0, last_snapshot_at: null },
    },
    tool_calls: calls,
  });

test("a heartbeat's tool calls count in /metrics only for tools the domain grants that agent: made-up names add no series", async () => {
  const metrics = new SupervisorMetrics();
  const url = await metrics.listen('127.0.0.1', 0);
  try {
    new AgentHeartbeats(grantedToolNames(domain)).watch(nc, names, metrics);
    await nc.flush();
    const madeUp = Array.from({ length: 1000 }, (_, i) => ({ tool: `made_up_${i}`, status: 'ok', count: 1 }));
    // refund is a tool of the domain, but not one Mira is granted; Bram is granted none.
    nc.publish(names.agentStatus('mira'), heartbeat('mira', [...madeUp, { tool: 'refund', status: 'ok', count: 3 }]));
    nc.publish(names.agentStatus('bram'), heartbeat('bram', [{ tool: 'lookup_order', status: 'ok', count: 2 }]));
    nc.publish(names.agentStatus('mira'), heartbeat('mira', [...madeUp, { tool: 'lookup_order', status: 'failed', count: 4 }]));
    // The heartbeats arrive in order: once the last one's granted call is counted, the others were read.
    const text = await eventually(
      async () => {
        const body = await (await fetch(url)).text();
        return /^thymos_tool_calls_total\{agent="mira",tool="lookup_order",status="failed"\} 4$/m.test(body) ? body : undefined;
      },
      10_000,
      "Mira's lookup_order calls counted",
    );
    const series = text.split('\n').filter((line) => line.startsWith('thymos_tool_calls_total{'));
    assert.deepEqual(series, ['thymos_tool_calls_total{agent="mira",tool="lookup_order",status="failed"} 4']);
  } finally {
    await metrics.close();
  }
});

test('a tool name longer than a domain allows makes the heartbeat invalid', () => {
  const long = JSON.parse(heartbeat('mira', [{ tool: 'x'.repeat(65), status: 'ok', count: 1 }])) as unknown;
  assert.equal(AgentStatusMessageSchema.safeParse(long).success, false);
  const fits = JSON.parse(heartbeat('mira', [{ tool: 'x'.repeat(64), status: 'ok', count: 1 }])) as unknown;
  assert.equal(AgentStatusMessageSchema.safeParse(fits).success, true);
});
