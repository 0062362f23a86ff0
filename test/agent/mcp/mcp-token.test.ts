import assert from 'node:assert/strict';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

describe('[mcp] require_token', () => {
  let ws: Workspace;
  let agent: AgentChild;
  let tokenFile: string;

  before(async () => {
    ws = createWorkspace({ extra: '[mcp]\nrequire_token = true' });
    agent = await startAgent({ id: 'elder_rowan', port: await freePort(), config: ws.configPath });
    tokenFile = join(ws.dir, 'data', 'agents', 'elder_rowan', 'mcp-token');
  });

  after(async () => {
    await killAllAgents();
    ws?.dispose();
  });

  const post = (headers: Record<string, string> = {}) =>
    fetch(agent.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(initialize),
    });

  test('the agent makes its token on first start, readable by its owner only', () => {
    assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
    assert.match(readFileSync(tokenFile, 'utf8'), /^[A-Za-z0-9_-]{43}$/);
  });

  test('/mcp refuses a request without the token or with a wrong one, with 401 and a stable code; /health stays open', async () => {
    const tries: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer nope' },
      { authorization: `Basic ${readFileSync(tokenFile, 'utf8')}` },
      { authorization: `Bearer ${readFileSync(tokenFile, 'utf8')}x` },
    ];
    for (const headers of tries) {
      const res = await post(headers);
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="thymos"');
      const body = (await res.json()) as { error: { message: string; data: { code: string } } };
      assert.equal(body.error.data.code, 'UNAUTHORIZED');
      assert.match(body.error.message, /agents\/elder_rowan\/mcp-token/);
    }
    assert.equal((await fetch(agent.url.replace('/mcp', '/health'))).status, 200);
  });

  test('a client that sends the token talks as usual', async () => {
    const token = readFileSync(tokenFile, 'utf8');
    const client = new Client({ name: 'with-token', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(agent.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    const state = await client.callTool({ name: 'get_elder_rowan_state', arguments: {} });
    assert.equal(state.isError, undefined);
    await client.close();
  });

  test('a restart keeps the token and narrows a loosened file back to 0600', async () => {
    const token = readFileSync(tokenFile, 'utf8');
    chmodSync(tokenFile, 0o644);
    assert.equal(await agent.stop(), 0);
    agent = await startAgent({ id: 'elder_rowan', port: await freePort(), config: ws.configPath });
    assert.equal(readFileSync(tokenFile, 'utf8'), token);
    assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
    assert.equal((await post({ authorization: `Bearer ${token}` })).status, 200);
  });
});
