import assert from 'node:assert/strict';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

import { logRequests } from '../../../agent/mcp/request-log.js';
import { toolError } from '../../../agent/mcp/tool-kit.js';
import { createLogger, logFeedOf } from '../../../shared/engines/pino-logger.js';
import { ErrorCode, ThymosError } from '../../../shared/errors/errors.js';
import { type LogRecord } from '../../../shared/platform/logger.js';
import { tempDir } from '../../helpers/temp-dir.js';

async function session(withArguments: boolean, level: 'debug' | 'info' = 'debug') {
  // An open descriptor, not a path: pino's file stream opens asynchronously and throws at exit if it never got there.
  const logger = createLogger({ level, feed: true, fd: openSync(join(tempDir('thymos-rl-'), 'x.log'), 'a') });
  const lines: LogRecord[] = [];
  logFeedOf(logger)?.listen(0, (r) => void lines.push(r));
  const server = new McpServer({ name: 's', version: '1' });
  server.registerTool('say', { inputSchema: { words: z.string() } }, async ({ words }) =>
    words === 'fail' ? toolError(new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, 'not now')) : { content: [{ type: 'text', text: words }] },
  );
  logRequests(server.server, logger, withArguments);
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: 'c', version: '1' });
  await client.connect(b);
  return { client, lines: () => lines.filter((l) => l.msg === 'mcp request'), close: () => client.close() };
}

describe('the mcp request line', () => {
  test('one line per request with method, tool, duration and how it ended; arguments only when asked', async () => {
    const quiet = await session(false);
    await quiet.client.callTool({ name: 'say', arguments: { words: 'the cellar key is under the mat' } });
    await quiet.client.callTool({ name: 'say', arguments: { words: 'fail' } });
    await quiet.client.listTools();
    const [, ok, failed, listed] = quiet.lines(); // the first is initialize
    assert.deepEqual([ok?.method, ok?.tool, ok?.code], ['tools/call', 'say', 'ok']);
    assert.equal(typeof ok?.ms, 'number');
    assert.equal(failed?.code, 'AGENT_NOT_ACTIVE');
    assert.deepEqual([listed?.method, listed?.code], ['tools/list', 'ok']);
    assert.doesNotMatch(JSON.stringify(quiet.lines()), /cellar key/);
    await quiet.close();

    const told = await session(true);
    await told.client.callTool({ name: 'say', arguments: { words: 'the cellar key is under the mat' } });
    assert.deepEqual(told.lines().find((l) => l.tool === 'say')?.arguments, { words: 'the cellar key is under the mat' });
    await told.close();
  });

  test('above debug nothing is written', async () => {
    const s = await session(true, 'info');
    await s.client.callTool({ name: 'say', arguments: { words: 'x' } });
    assert.deepEqual(s.lines(), []);
    await s.close();
  });
});
