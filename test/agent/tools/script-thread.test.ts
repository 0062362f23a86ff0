import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

const DOMAIN = `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents { ["desk"] { persona { name = "Desk" }; capabilities { "*" } } }
tools {
  ["spin"] { description = "Loops synchronously for ever"; sideEffect = "read_only"; timeoutMs = 500; executor = new Script { path = "tools.mjs"; export = "spin" } }
  ["deaf"] { description = "Keeps busy, deaf to its signal"; input { ["file"] {} }; sideEffect = "read_only"; timeoutMs = 500; executor = new Script { path = "tools.mjs"; export = "deaf" } }
  ["hog"] { description = "Allocates without bound"; sideEffect = "read_only"; timeoutMs = 60000; executor = new Script { path = "tools.mjs"; export = "hog" } }
  ["shout"] { description = "Shouts a word"; input { ["word"] {} }; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "shout" } }
}
`;

const SCRIPT = `
import { readlinkSync, writeFileSync } from 'node:fs';
export function spin() { for (;;) {} }
export async function deaf(input) {
  // The thread it runs on, as the kernel names it: "<pid>/task/<tid>".
  writeFileSync(input.file, readlinkSync('/proc/thread-self'));
  for (;;) await new Promise((resolve) => setImmediate(resolve));
}
export function hog() {
  const kept = [];
  for (;;) kept.push(new Array(100000).fill(kept.length));
}
export function shout(input) { return input.word.toUpperCase(); }
`;

/** Long enough for any answer on a loaded machine, short enough that an agent that no longer answers fails the test rather than its runner. */
const ANSWER_WITHIN_MS = 20_000;

const call = (c: Client, name: string, args: Record<string, unknown>) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: ANSWER_WITHIN_MS }) as Promise<CallToolResult>;
const errorOf = (r: CallToolResult) =>
  r._meta?.['thymos/error'] as { code: string; message: string; details?: Record<string, unknown> } | undefined;

describe('a Script that hangs, ignores its signal or runs out of memory, on a real agent', () => {
  let ws: Workspace;
  let agent: AgentChild;
  let client: Client;

  /** The agent answers a ping and a healthy call of the same Script module. */
  async function answers(): Promise<void> {
    await client.ping({ timeout: ANSWER_WITHIN_MS });
    assert.equal(((await call(client, 'shout', { word: 'still here' })).content[0] as { text: string }).text, 'STILL HERE');
    assert.equal(agent.child.exitCode, null, 'the agent is running');
  }

  before(async () => {
    ws = createWorkspace({ schema: null });
    writeFileSync(join(ws.dir, 'tools.pkl'), DOMAIN);
    writeFileSync(join(ws.dir, 'tools.mjs'), SCRIPT);
    ws.writeConfig(
      [
        'data_dir = "data"',
        '[domain]',
        'schema = "tools.pkl"',
        '[agent]',
        'nats_wait_ms = 200',
        '[memory]',
        'concepts = false',
        '[tools]',
        'script_memory_mb = 64',
      ].join('\n'),
    );
    agent = await startAgent({ id: 'desk', port: await freePort(), config: ws.configPath });
    client = await agent.client();
  });

  after(async () => {
    await agent.stop();
    await killAllAgents();
    ws.dispose();
  });

  test('a synchronous endless loop is answered TOOL_TIMEOUT at its timeout, and the agent answers the next call', async () => {
    const r = await call(client, 'spin', {});
    assert.equal(errorOf(r)?.code, 'TOOL_TIMEOUT', JSON.stringify(r));
    await answers();
  });

  test('a script deaf to its signal is stopped after its timeout: the thread it ran on leaves the agent process', async () => {
    const file = join(ws.dir, 'deaf-thread.txt');
    const r = await call(client, 'deaf', { file });
    assert.equal(errorOf(r)?.code, 'TOOL_TIMEOUT', JSON.stringify(r));
    const [pid, , tid] = readFileSync(file, 'utf8').split('/');
    assert.equal(Number(pid), agent.pid, 'it ran inside the agent process');
    // A thread of its own that is gone burns nothing; the agent's main thread would never go.
    await eventually(
      () => (existsSync(`/proc/${pid}/task/${tid}`) ? undefined : true),
      ANSWER_WITHIN_MS,
      `thread ${tid} of the agent to end`,
    );
    await answers();
  });

  test('a script that allocates without bound is TOOL_FAILED naming the memory limit, and the agent answers the next call', async () => {
    const r = await call(client, 'hog', {});
    assert.equal(errorOf(r)?.code, 'TOOL_FAILED', JSON.stringify(r));
    assert.match(errorOf(r)!.message, /^hog: ran out of memory: .*\[tools\] script_memory_mb = 64 MB/);
    assert.equal(errorOf(r)!.details?.memory_limit_mb, 64);
    await answers();
  });
});
