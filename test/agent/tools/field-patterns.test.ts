import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

/** A tool whose field pattern backtracks catastrophically in JavaScript's engine. */
const DOMAIN = `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents { ["desk"] { persona { name = "Desk" }; capabilities { "spell" } } }
tools {
  ["spell"] { description = "Spells a word"; input { ["word"] { pattern = "(a+)+b" } }; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "spell" } }
}
`;

// Without a linear-time engine the first call holds the agent for minutes: the deadline turns that into a failure, not a hang.
const CALL_DEADLINE_MS = 30_000;

const call = (c: Client, word: string) =>
  c.callTool({ name: 'spell', arguments: { word } }, undefined, { timeout: CALL_DEADLINE_MS }) as Promise<CallToolResult>;
const errorOf = (r: CallToolResult) => r._meta?.['thymos/error'] as { code: string; message: string } | undefined;

describe('field patterns on a real agent: a catastrophic argument is refused and the agent goes on answering', () => {
  let ws: Workspace;
  let agent: AgentChild;
  let client: Client;

  before(async () => {
    ws = createWorkspace({ schema: null });
    writeFileSync(join(ws.dir, 'tools.pkl'), DOMAIN);
    writeFileSync(join(ws.dir, 'tools.mjs'), 'export function spell(input) { return { spelled: input.word.split("").join("-") }; }\n');
    ws.writeConfig(
      ['data_dir = "data"', '[domain]', 'schema = "tools.pkl"', '[agent]', 'nats_wait_ms = 200', '[memory]', 'concepts = false'].join('\n'),
    );
    agent = await startAgent({ id: 'desk', port: await freePort(), config: ws.configPath });
    client = await agent.client();
  });

  after(async () => {
    await killAllAgents();
    ws.dispose();
  });

  test('34 a and a ! against (a+)+b is INVALID_INPUT naming the pattern, and the agent then answers a ping and another call', async () => {
    const refused = await call(client, `${'a'.repeat(34)}!`);
    assert.equal(errorOf(refused)?.code, 'INVALID_INPUT', JSON.stringify(refused));
    assert.match(errorOf(refused)!.message, /expected a value matching \(a\+\)\+b/);
    assert.deepEqual(await client.ping({ timeout: CALL_DEADLINE_MS }), {});
    const spelled = await call(client, 'aab');
    assert.equal(spelled.isError, undefined, JSON.stringify(spelled));
    assert.equal((JSON.parse((spelled.content[0] as { text: string }).text) as { spelled: string }).spelled, 'a-a-b');
  });
});
