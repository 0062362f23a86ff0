import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { EmptyResultSchema, type LoggingMessageNotification, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { createLogger, logFeedOf } from '../../../shared/engines/pino-logger.js';
import { type LogRecord } from '../../../shared/platform/logger.js';
import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

describe("a logger's feed", () => {
  test('hands each listener the records at or above its level, only while it listens, and child loggers write to it too', () => {
    const logger = createLogger({ level: 'debug', fd: 2, feed: true });
    const feed = logFeedOf(logger.child({ part: 'x' }));
    assert.ok(feed, 'a child logger finds its parent’s feed');
    const warnings: LogRecord[] = [];
    const all: LogRecord[] = [];
    const stopWarnings = feed.listen(40, (r) => warnings.push(r));
    feed.listen(10, (r) => all.push(r));
    const child = logger.child({ part: 'x' });
    child.debug('quiet');
    child.warn({ n: 1 }, 'loud');
    stopWarnings();
    logger.error('after');
    assert.deepEqual(
      warnings.map((r) => [r.level, r.msg, r.n, r.part]),
      [[40, 'loud', 1, 'x']],
    );
    assert.deepEqual(
      all.map((r) => r.msg),
      ['quiet', 'loud', 'after'],
    );
    assert.equal(logFeedOf(createLogger({ fd: 2 })), undefined, 'a logger made without a feed has none');
  });
});

describe('MCP logging on an agent', () => {
  let ws: Workspace;
  let agent: AgentChild;
  let client: Client;
  const messages: LoggingMessageNotification['params'][] = [];

  before(async () => {
    ws = createWorkspace();
    ws.writeConfig(readFileSync(ws.configPath, 'utf8').replace('level = "info"', 'level = "debug"'));
    agent = await startAgent({ id: 'tomas_innkeeper', port: await freePort(), config: ws.configPath });
    client = await agent.client();
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void messages.push(n.params));
  });
  after(async () => {
    await client?.close();
    assert.equal(await agent.stop(), 0);
    await killAllAgents();
    ws.dispose();
  });

  test('the agent declares the logging capability', () => {
    assert.deepEqual(client.getServerCapabilities()?.logging, {});
  });

  test("after logging/setLevel debug, the session gets the agent's own records: a line for each of its MCP requests", async () => {
    assert.deepEqual(await client.setLoggingLevel('debug'), {});
    const line = await eventually(
      async () => {
        await client.callTool({ name: 'get_tomas_innkeeper_state', arguments: {} });
        return messages.find((m) => (m.data as { msg?: string; tool?: string }).tool === 'get_tomas_innkeeper_state');
      },
      20_000,
      'a log message about the tool call',
    );
    assert.equal(line.level, 'debug');
    assert.equal(line.logger, 'thymos-agent-tomas_innkeeper');
    const data = line.data as { msg: string; method: string; ms: number; code: string; arguments?: unknown };
    assert.deepEqual([data.msg, data.method, data.code], ['mcp request', 'tools/call', 'ok']);
    assert.ok(typeof data.ms === 'number' && data.ms >= 0, `ms: ${data.ms}`);
    assert.equal(data.arguments, undefined, 'no arguments unless [log] mcp_arguments');
  });

  test('the line of a refused call carries its code, and not what was said', async () => {
    await client.callTool({ name: 'talk_to_tomas_innkeeper', arguments: { message: '', speaker: 'a secret speaker' } });
    const line = await eventually(
      async () => messages.find((m) => (m.data as { tool?: string; code?: string }).tool === 'talk_to_tomas_innkeeper'),
      20_000,
      'the line of the refused call',
    );
    assert.equal((line.data as { code: string }).code, 'INVALID_INPUT');
    assert.doesNotMatch(JSON.stringify(line.data), /a secret speaker/);
  });

  test('a higher level leaves the debug lines out; an unknown level is refused as invalid params', async () => {
    assert.deepEqual(await client.setLoggingLevel('warning'), {});
    messages.length = 0;
    // Under warning, list the tools: each request logs a debug line the session must not get.
    for (let i = 0; i < 3; i++) await client.listTools();
    await client.setLoggingLevel('debug');
    // Messages come over one stream in the order they were sent: once a later line arrives,
    // a line about the listings would have arrived before it.
    await eventually(async () => {
      await client.callTool({ name: 'get_tomas_innkeeper_state', arguments: {} });
      return messages.some((m) => (m.data as { tool?: string }).tool === 'get_tomas_innkeeper_state') ? true : undefined;
    });
    assert.deepEqual(
      messages.filter((m) => (m.data as { method?: string }).method === 'tools/list'),
      [],
    );
    await assert.rejects(
      client.request({ method: 'logging/setLevel', params: { level: 'loud' } } as never, EmptyResultSchema),
      (e: { code?: number; message?: string }) =>
        e.code === -32602 && /level "loud" is not one of debug, info, notice, warning/.test(e.message ?? ''),
    );
  });
});
