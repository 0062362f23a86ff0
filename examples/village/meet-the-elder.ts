/**
 * Runs Elder Rowan as his own process, talks to him over MCP like any MCP client
 * would, passivates him, wakes him, and checks that he behaves. Exits non-zero when a
 * check fails.
 *
 *   npm run example
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { loadConfig } from '../../index.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const bin = fileURLToPath(new URL('../../dist/bin/thymos.js', import.meta.url));
const failures: string[] = [];

function check(what: string, ok: boolean, detail = ''): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? ` — ${detail}` : ''}`);
  if (!ok) failures.push(what);
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function text(result: unknown): string {
  return ((result as { content: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join('\n');
}

async function startElder(port: number, mode: 'active' | 'passive') {
  const child = spawn(
    process.execPath,
    [bin, 'agent', '--agent-id', 'elder_rowan', '--port', String(port), '--mode', mode, '--config', `${here}thymos.toml`],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.once('message', (m) => (m === 'ready' ? resolve() : reject(new Error(String(m)))));
    child.once('exit', (code) => reject(new Error(`elder_rowan exited with ${code} before ready`)));
  });
  // He asks every request for his token, which he made on his first start: as any MCP client, send it.
  const token = readFileSync(join(loadConfig(`${here}thymos.toml`).dataPath, 'agents', 'elder_rowan', 'mcp-token'), 'utf8').trim();
  const client = new Client({ name: 'village-example', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  const stop = async () => {
    await client.close();
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    return exited;
  };
  return { client, stop };
}

const port = await freePort();
console.log(`Elder Rowan wakes on http://127.0.0.1:${port}/mcp`);
const elder = await startElder(port, 'active');
const tools = (await elder.client.listTools()).tools.map((t) => t.name);
check('he offers talk_to_elder_rowan', tools.includes('talk_to_elder_rowan'), tools.join(', '));

const greeting = await elder.client.callTool({
  name: 'talk_to_elder_rowan',
  arguments: { message: 'What does the blacksmith owe?', speaker: 'player' },
});
console.log(`  player: What does the blacksmith owe?\n  Elder Rowan: ${text(greeting)}`);
check('he answers from what he knows', /three silver/.test(text(greeting)));

const secret = `The miller hid ${Math.floor(Math.random() * 900 + 100)} coins under the bridge`;
await elder.client.callTool({ name: 'remember', arguments: { content: secret, importance: 0.9, tags: ['secret'] } });
console.log(`  (he is told: ${secret})`);
check('he exits cleanly when put to sleep', (await elder.stop()) === 0);

const listening = await startElder(port, 'passive');
const refused = await listening.client.callTool({ name: 'talk_to_elder_rowan', arguments: { message: 'Hello?' } });
check('while listening he does not talk', refused.isError === true && /AGENT_NOT_ACTIVE/.test(text(refused)), text(refused));
const knows = await listening.client.callTool({ name: 'query_elder_rowan_knowledge', arguments: { query: 'miller coins bridge' } });
check('after a restart he still remembers what he was told', text(knows).includes(secret));
check('he exits cleanly again', (await listening.stop()) === 0);

if (failures.length > 0) {
  console.error(`${failures.length} check(s) failed: ${failures.join('; ')}`);
  process.exit(1);
}
console.log('all checks passed');
