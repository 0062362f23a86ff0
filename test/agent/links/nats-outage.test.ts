import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connect } from '@nats-io/transport-node';

import { killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

async function natsLink(client: Client): Promise<string> {
  const result = await client.callTool({ name: 'get_mira_herbalist_state', arguments: {} });
  return (result.structuredContent as { nats: string }).nats;
}

async function until(what: string, fn: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('NATS outage', () => {
  let nats: TestNatsServer | undefined;
  let ws: Workspace | undefined;
  after(async () => {
    await killAllAgents();
    await nats?.stop();
    ws?.dispose();
  });

  test('an agent whose NATS is down still starts and serves MCP, then links up when NATS comes back', async () => {
    nats = await startNatsServer();
    await nats.stop();
    ws = createWorkspace({ natsUrl: nats.url });
    const agent = await startAgent({ id: 'mira_herbalist', port: await freePort(), config: ws.configPath });
    const client = await agent.client();
    assert.equal(await natsLink(client), 'disconnected');
    const stored = await client.callTool({ name: 'remember', arguments: { content: 'Silverleaf cures the grey cough' } });
    assert.equal(stored.isError, undefined, 'memory works without NATS');
    assert.match(agent.output(), /nats not reachable yet; serving MCP and reconnecting in the background/);

    await nats.start();
    await until('the agent to link to NATS', async () => (await natsLink(client)) === 'connected');
    // This server has no JetStream: the readers' links fail, and are tried again with a doubled wait.
    await until('a second try at linking the readers', async () =>
      /"retry_in_ms":2000,"msg":"world events still unavailable"/.test(agent.output()),
    );
    const nc = await connect({ servers: nats.url });
    const reply = (await nc.request('thymos.agent.mira_herbalist.control', JSON.stringify({ op: 'get_state' }), { timeout: 3000 })).json<{
      ok: boolean;
      state: { memory_count: number };
    }>();
    assert.equal(reply.ok, true);
    await nc.close();

    await nats.stop();
    await until('the agent to notice NATS is gone', async () => (await natsLink(client)) === 'disconnected');
    const recall = await client.callTool({ name: 'recall', arguments: { query: 'grey cough' } });
    assert.match((recall.content as Array<{ text: string }>)[0]!.text, /Silverleaf cures the grey cough/);

    await nats.start();
    await until('the agent to reconnect', async () => (await natsLink(client)) === 'connected');
    assert.equal(await agent.stop(), 0);
  });
});
