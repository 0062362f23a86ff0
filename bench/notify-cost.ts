/**
 * What one MCP resource notification costs the process that sends it: a child process serves
 * MCP over Streamable HTTP with the SDK's transport (as an agent does, with the agents' Node
 * flags) and sends `notifications/resources/updated` to one SDK client, GAP ms apart, the way a
 * hearer announces lone events. Its CPU over ROUNDS rounds of N notifications, each less the CPU
 * of as many gaps with nothing sent, is printed as the median per notification.
 *
 *   node --import tsx bench/notify-cost.ts
 *
 * Settings from the environment: N per round (100), GAP ms (10), ROUNDS (11).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { AGENT_NODE_ARGS } from '../supervisor/lifecycle/agent-app.js';
import { quantile, round } from './stats.js';

const N = Number(process.env.N ?? 100);
const GAP = Number(process.env.GAP ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 11);
const URI = 'agent://bench/memories';

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The sending side: serves MCP, then on request sends the rounds and answers with the CPU per notification of each. */
async function sender(): Promise<void> {
  const mcp = new McpServer({ name: 'notify-cost', version: '1' }, { capabilities: { resources: { subscribe: true } } });
  let transport: StreamableHTTPServerTransport | undefined;
  const server = createServer((req, res) => {
    void (async () => {
      if (!transport) {
        transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
        await mcp.connect(transport);
      }
      await transport.handleRequest(req, res);
    })();
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.once('message', () => {
    void (async () => {
      const perNotification: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const sent0 = cpuMs();
        for (let i = 0; i < N; i++) {
          await mcp.server.sendResourceUpdated({ uri: URI });
          await sleep(GAP);
        }
        const sent = cpuMs() - sent0;
        const idle0 = cpuMs();
        for (let i = 0; i < N; i++) await sleep(GAP);
        perNotification.push((sent - (cpuMs() - idle0)) / N);
      }
      process.send!({ perNotification });
    })();
  });
}

async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['--sender'], { execArgv: ['--import', 'tsx', ...AGENT_NODE_ARGS] });
  try {
    const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', resolve));
    const client = new Client({ name: 'notify-cost', version: '1' });
    let received = 0;
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, () => {
      received++;
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    // The standalone SSE stream opens after initialization; wait for it before sending.
    await sleep(500);
    child.send('go');
    const { perNotification } = await new Promise<{ perNotification: number[] }>((resolve) => child.once('message', resolve));
    console.log(
      `CPU per notification sent, median of ${ROUNDS} rounds of ${N}, ${GAP} ms apart: ${round(quantile(perNotification, 0.5), 3)} ms (rounds: ${perNotification.map((x) => round(x, 2)).join(', ')}); received ${received} of ${ROUNDS * N}`,
    );
    await client.close();
  } finally {
    child.kill();
  }
}

if (process.argv.includes('--sender')) await sender();
else await main();
