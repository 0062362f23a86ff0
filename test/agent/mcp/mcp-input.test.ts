import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The agent's bearer token (\`[mcp] require_token\` is on by default), sent with every raw request. */
let auth: Record<string, string> = {};

function raw(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'POST',
        path: options.path ?? '/mcp',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth, ...options.headers },
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

describe('bad input at the MCP edge', () => {
  let ws: Workspace;
  let agent: AgentChild;
  let client: Client;

  before(async () => {
    ws = createWorkspace({
      agent: [],
      extra: '[mcp]\nmax_body_bytes = 65536\n[memory]\nmax_content_chars = 2000\n[host]\nadvertise = "mill-2.example"',
    });
    agent = await startAgent({ id: 'tomas_innkeeper', port: await freePort(), config: ws.configPath });
    auth = agent.headers();
    client = await agent.client();
  });
  after(async () => {
    assert.equal(await agent.stop(), 0, 'the agent survived every case and still stops cleanly');
    await killAllAgents();
    ws.dispose();
  });

  type ToolResult = {
    isError?: boolean;
    content: Array<{ text: string }>;
    _meta?: { 'thymos/error'?: { code: string; location?: { path?: string } } };
  };

  test('an unknown tool is a NOT_FOUND error result that names it, coded like every other error', async () => {
    const result = (await client.callTool({ name: 'steal_gold', arguments: {} })) as ToolResult;
    assert.equal(result.isError, true);
    assert.match(result.content[0]!.text, /^NOT_FOUND: no tool "steal_gold" on this agent; tools\/list/);
    assert.deepEqual([result._meta?.['thymos/error']?.code, result._meta?.['thymos/error']?.location?.path], ['NOT_FOUND', 'name']);
  });

  test('wrong argument types and out-of-range values are refused and store nothing', async () => {
    const before = (
      (await client.callTool({ name: 'get_tomas_innkeeper_state', arguments: {} })).structuredContent as { memory_count: number }
    ).memory_count;
    const cases: Array<Record<string, unknown>> = [
      { content: 42 },
      { content: '' },
      { content: 'x', importance: 2 },
      { content: 'x', importance: 'high' },
      { content: 'x', tags: 'not-a-list' },
      { content: 'x', tags: [''] },
      { content: 'x'.repeat(2001) },
      {},
    ];
    for (const args of cases) {
      const result = (await client.callTool({ name: 'remember', arguments: args })) as ToolResult;
      assert.equal(result.isError, true, JSON.stringify(args).slice(0, 80));
      // Refused by the tool's schema before it runs, and coded as the README says: INVALID_INPUT, not a bare -32602.
      assert.match(result.content[0]!.text, /^INVALID_INPUT: arguments of remember: .*(expected|Invalid|Too)/is);
      assert.equal(result._meta?.['thymos/error']?.code, 'INVALID_INPUT');
    }
    const recall = (await client.callTool({ name: 'recall', arguments: { query: 'x', k: 0 } })) as { isError?: boolean };
    assert.equal(recall.isError, true);
    const after = (
      (await client.callTool({ name: 'get_tomas_innkeeper_state', arguments: {} })).structuredContent as { memory_count: number }
    ).memory_count;
    assert.equal(after, before);
  });

  test('an oversize message is refused with the limit named', async () => {
    const result = (await client.callTool({ name: 'talk_to_tomas_innkeeper', arguments: { message: 'y'.repeat(5000) } })) as {
      isError?: boolean;
      content: Array<{ text: string }>;
    };
    assert.equal(result.isError, true);
    assert.match(result.content[0]!.text, /at most 2000 characters/);
  });

  test('a body that is not JSON is a JSON-RPC parse error', async () => {
    const res = await raw(agent.port, { body: '{"jsonrpc": "2.0", "method": ' });
    assert.equal(res.status, 400);
    assert.equal(JSON.parse(res.body).error.code, -32700);
  });

  test('JSON that is not an initialize request, without a session, is refused', async () => {
    for (const body of ['[]', '42', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', '{"hello":"world"}']) {
      const res = await raw(agent.port, { body });
      assert.equal(res.status, 400, body);
      assert.equal(JSON.parse(res.body).error.code, -32600);
    }
  });

  test('malformed JSON-RPC inside a session gets a protocol error, not a crash', async () => {
    const init = await raw(agent.port, { body: INIT });
    assert.equal(init.status, 200);
    const session = init.headers['mcp-session-id'] as string;
    assert.ok(session);
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    await raw(agent.port, { headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    for (const body of [
      '{"jsonrpc":"1.0","id":2,"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":{"a":1},"method":7}',
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall","arguments":"nope"}}',
    ]) {
      const res = await raw(agent.port, { headers, body });
      assert.ok(res.status >= 200 && res.status < 500, `${body} → ${res.status}`);
      assert.match(res.body, /error/i, body);
    }
    const ok = await raw(agent.port, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /talk_to_tomas_innkeeper/);
  });

  test('a body over mcp.max_body_bytes is refused with 413', async () => {
    const res = await raw(agent.port, { body: Buffer.alloc(70_000, 'a') });
    assert.equal(res.status, 413);
    assert.match(JSON.parse(res.body).error.message, /max_body_bytes/);
  });

  test('an unknown session id is 404, a foreign Host or Origin is 403 (DNS-rebinding protection)', async () => {
    const unknown = await raw(agent.port, {
      headers: { 'mcp-session-id': 'nope' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    assert.equal(unknown.status, 404);
    const host = await raw(agent.port, { headers: { host: 'evil.example:80' }, body: INIT });
    assert.equal(host.status, 403);
    // The address the host advertises is the agent's own name.
    const advertised = await raw(agent.port, { method: 'GET', path: '/health', headers: { host: `mill-2.example:${agent.port}` } });
    assert.equal(advertised.status, 200);
    const elsewhere = await raw(agent.port, { method: 'GET', path: '/health', headers: { host: `mill-3.example:${agent.port}` } });
    assert.equal(elsewhere.status, 403);
    const origin = await raw(agent.port, { headers: { origin: 'http://evil.example' }, body: INIT });
    assert.equal(origin.status, 403);
    const health = await raw(agent.port, { method: 'GET', path: '/health' });
    assert.equal(health.status, 200);
    assert.deepEqual(JSON.parse(health.body), { ok: true, id: 'tomas_innkeeper', status: 'ready', mode: 'active' });
  });

  test('fuzzed tool arguments never crash the agent', async () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const values: unknown[] = [
      null,
      true,
      -1,
      1e308,
      'x',
      '',
      '\u0000\uffff',
      '💥'.repeat(100),
      [],
      [[[[]]]],
      {},
      { a: { b: { c: {} } } },
      'SELECT * FROM memory; REMOVE TABLE memory;',
      'bram_smith',
      150,
    ];
    const tools = [
      'remember',
      'recall',
      'talk_to_tomas_innkeeper',
      'query_tomas_innkeeper_knowledge',
      'get_tomas_innkeeper_state',
      'send_message',
      'ask_agent',
    ];
    const keys = ['content', 'query', 'message', 'k', 'tags', 'importance', 'speaker', 'to', 'question', 'timeout_ms', 'zzz'];
    for (let i = 0; i < 150; i++) {
      const args: Record<string, unknown> = {};
      for (let j = 0; j < 1 + Math.floor(rand() * 3); j++)
        args[keys[Math.floor(rand() * keys.length)]!] = values[Math.floor(rand() * values.length)];
      const result = (await client.callTool({ name: tools[Math.floor(rand() * tools.length)]!, arguments: args })) as {
        content: unknown[];
      };
      assert.ok(Array.isArray(result.content));
    }
    const health = await raw(agent.port, { method: 'GET', path: '/health' });
    assert.equal(health.status, 200);
    const recall = (await client.callTool({ name: 'recall', arguments: { query: 'SELECT memory REMOVE TABLE' } })) as { isError?: boolean };
    assert.equal(recall.isError, undefined, 'SurrealQL in text is data: the table is still there');
  });
});
