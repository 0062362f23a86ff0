import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

const DOMAIN = `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents { ["desk"] { persona { name = "Desk" }; capabilities { "*"; "!tag:danger*" } } }
tools {
  ["drop"] { description = "Taken back by its tag"; tags { "danger" }; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "wipe" } }
  ["wipe"] { description = "Granted by *, taken back by its tag"; tags { "danger/high" }; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "wipe" } }
  ["shout"] { description = "Shouts a word"; tags { "calm/loud" }; input { ["word"] {} }; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "shout" } }
  ["lookup"] { description = "Never called: it makes BOUNDARY_TOKEN a secret"; sideEffect = "read_only"; executor = new Http { url = "http://127.0.0.1:9/x"; headers { ["Authorization"] = new Secret { env = "BOUNDARY_TOKEN" } } } }
  ["tell"] { description = "Logs the token"; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "tell" } }
  ["give"] { description = "Returns what it is asked for"; input { ["kind"] { type = "enum"; values { "function"; "symbol"; "bigint"; "nested_bigint"; "cycle"; "plain" } } }; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "give" } }
}
`;

const SCRIPT = `
export function wipe() { return 'wiped'; }
export function shout(input) { return input.word.toUpperCase(); }
export function tell() {
  console.log('the token is', process.env.BOUNDARY_TOKEN);
  console.error({ token: process.env.BOUNDARY_TOKEN });
  process.stdout.write('written: ' + process.env.BOUNDARY_TOKEN + '\\n');
  return 'told';
}
export function give({ kind }) {
  const cycle = { name: 'loop' };
  cycle.self = cycle;
  return { function: () => 1, symbol: Symbol('s'), bigint: 10n, nested_bigint: { n: 10n }, cycle, plain: { kind } }[kind];
}
`;

const SECRET = 'b0undary-t0ken-that-must-not-be-logged';

const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const errorOf = (r: CallToolResult) => r._meta?.['thymos/error'] as { code: string; message: string } | undefined;

describe('the bounds of the tool path on a real agent', () => {
  let ws: Workspace;
  let agent: AgentChild;
  let client: Client;

  before(async () => {
    ws = createWorkspace({ schema: null });
    writeFileSync(join(ws.dir, 'tools.pkl'), DOMAIN);
    writeFileSync(join(ws.dir, 'tools.mjs'), SCRIPT);
    ws.writeConfig(
      ['data_dir = "data"', '[domain]', 'schema = "tools.pkl"', '[agent]', 'nats_wait_ms = 200', '[memory]', 'concepts = false'].join('\n'),
    );
    agent = await startAgent({
      id: 'desk',
      port: await freePort(),
      config: ws.configPath,
      env: { ...process.env, BOUNDARY_TOKEN: SECRET },
    });
    client = await agent.client();
  });

  after(async () => {
    await agent.stop();
    await killAllAgents();
    ws.dispose();
  });

  test('a tool tagged danger/high under "*" and "!tag:danger*" is neither listed nor callable', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('shout'), names.join(', '));
    assert.ok(!names.includes('drop'), 'the tag danger is taken back');
    assert.ok(!names.includes('wipe'), `the tag danger/high is taken back too, yet wipe is listed: ${names.join(', ')}`);
    const r = await call(client, 'wipe', {});
    assert.equal(errorOf(r)?.code, 'NOT_FOUND', JSON.stringify(r));
    const catalogue = JSON.parse(
      ((await client.readResource({ uri: 'agent://desk/tools' })).contents[0] as { text: string }).text,
    ) as Array<{ name: string }>;
    assert.deepEqual(
      catalogue.map((t) => t.name).filter((n) => n === 'wipe' || n === 'drop'),
      [],
      'nor in the catalogue',
    );
  });

  test('a Script that returns no JSON value (a function, a Symbol, a BigInt, a cycle) is TOOL_FAILED naming the tool', async () => {
    for (const kind of ['function', 'symbol', 'bigint', 'nested_bigint', 'cycle']) {
      const r = await call(client, 'give', { kind });
      assert.equal(errorOf(r)?.code, 'TOOL_FAILED', `${kind}: ${JSON.stringify(r)}`);
      assert.match(errorOf(r)!.message, /^give: .*expected a JSON value/, kind);
    }
    assert.deepEqual(JSON.parse(((await call(client, 'give', { kind: 'plain' })).content[0] as { text: string }).text), { kind: 'plain' });
  });

  test('an argument the tool does not declare is INVALID_INPUT naming it, not dropped', async () => {
    const r = await call(client, 'shout', { word: 'hi', wrod: 'typo' });
    assert.equal(errorOf(r)?.code, 'INVALID_INPUT', JSON.stringify(r));
    assert.match(errorOf(r)!.message, /"wrod"/);
    const shout = (await client.listTools()).tools.find((t) => t.name === 'shout')!;
    assert.equal(shout.inputSchema.additionalProperties, false, 'and the advertised schema says so');
  });

  test("what a Script logs with console, or writes to process.stdout itself, reaches the agent's log with its secrets redacted", async () => {
    assert.equal(((await call(client, 'tell', {})).content[0] as { text: string }).text, 'told');
    await eventually(
      () => ((agent.output().match(/\[secret BOUNDARY_TOKEN\]/g) ?? []).length >= 3 ? true : undefined),
      10_000,
      'both console lines and the written one in the log',
    );
    assert.ok(!agent.output().includes(SECRET), 'the secret is not in the log');
  });
});
