import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { freePort } from '../../helpers/ports.js';
import { REPO_ROOT, VILLAGE_SCHEMA } from '../../helpers/workspace.js';

const run = promisify(execFile);
/** The manual's page on MCP and the README, where the snippets are (the page's first: a single agent's). */
const README = ['docs/agents-and-mcp.md', 'README.md'].map((page) => readFileSync(join(REPO_ROOT, page), 'utf8')).join('\n');
/** The port the README's snippets name. */
const README_PORT = '4101';

/** The shell commands that start with `npx @modelcontextprotocol/inspector`, continuation lines joined, each once. */
function inspectorSnippets(): string[] {
  const blocks = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\\\n\s*/g, ''));
  return [...new Set(blocks.flatMap((b) => b.split('\n')).filter((l) => l.startsWith('npx @modelcontextprotocol/inspector')))];
}

/** The `{"mcpServers": …}` snippets (Claude Desktop's configuration). */
function mcpServersSnippets(): Array<{ command: string; args: string[] }> {
  return [...README.matchAll(/`(\{"mcpServers": .*?\}\}\})`/g)].map(
    (m) => Object.values((JSON.parse(m[1]!) as { mcpServers: Record<string, { command: string; args: string[] }> }).mcpServers)[0]!,
  );
}

/**
 * A folder with a thymos.toml, inside the repository (under the ignored `.tmp/`) so that `npx`
 * run there finds the Inspector and mcp-remote among the development dependencies.
 */
function workspace(extra: string): string {
  mkdirSync(join(REPO_ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(REPO_ROOT, '.tmp', 'mcp-clients-'));
  writeFileSync(
    join(dir, 'thymos.toml'),
    ['data_dir = "data"', '[domain]', `schema = ${JSON.stringify(VILLAGE_SCHEMA)}`, '[agent]', 'nats_wait_ms = 200', extra].join('\n'),
  );
  return dir;
}

async function shell(line: string, cwd: string): Promise<string> {
  const { stdout } = await run('bash', ['-c', line], { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function throughMcpRemote(
  server: { command: string; args: string[] },
  cwd: string,
): Promise<{ tools: string[]; state: { id: string; status: string } }> {
  const transport = new StdioClientTransport({ command: server.command, args: server.args, cwd, stderr: 'pipe' });
  const client = new Client({ name: 'claude-desktop-like', version: '1.0.0' });
  await client.connect(transport);
  try {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    const state = (await client.callTool({ name: 'get_elder_rowan_state', arguments: {} })).structuredContent as {
      id: string;
      status: string;
    };
    return { tools, state };
  } finally {
    await client.close();
  }
}

describe('stock MCP clients, configured as the README says', () => {
  const dirs: string[] = [];
  let open: { dir: string; port: string };
  let guarded: { dir: string; port: string; token: string };

  before(async () => {
    // `open` turns the token off, as a user may choose to; `guarded` keeps the default.
    open = { dir: workspace('[mcp]\nrequire_token = false'), port: String(await freePort()) };
    guarded = { dir: workspace(''), port: String(await freePort()), token: '' };
    dirs.push(open.dir, guarded.dir);
    await startAgent({ id: 'elder_rowan', port: Number(open.port), config: join(open.dir, 'thymos.toml') });
    await startAgent({ id: 'elder_rowan', port: Number(guarded.port), config: join(guarded.dir, 'thymos.toml') });
    guarded.token = readFileSync(join(guarded.dir, 'data', 'agents', 'elder_rowan', 'mcp-token'), 'utf8').trim();
  });

  after(async () => {
    await killAllAgents();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('the MCP Inspector CLI: tools/list, tools/call and resources/read as written, with the token an agent asks for by default', async () => {
    const all = inspectorSnippets();
    // The fleet's form asks `thymos url` for the address and the header (the pool test checks what they print): here, the guarded agent's.
    const fleetForm = all.filter((l) => l.includes('"$(thymos url elder_rowan)"'));
    const snippets = all.filter((l) => !fleetForm.includes(l));
    assert.equal(snippets.length, 3, 'the manual shows three Inspector commands for one agent');
    assert.equal(fleetForm.length, 1, "and one for an agent of a fleet, the README's");
    for (const l of all) assert.match(l, / --header "/, 'every one sends the token');
    const asFleet = (l: string) =>
      l
        .replace('"$(thymos url elder_rowan)"', `http://127.0.0.1:${guarded.port}/mcp`)
        .replace('"$(thymos url elder_rowan --header)"', `"Authorization: Bearer ${guarded.token}"`);
    const [list, call, read, fleetList] = await Promise.all(
      [...snippets, ...fleetForm].map((l) => shell(asFleet(l).replaceAll(README_PORT, guarded.port), guarded.dir)),
    );
    assert.deepEqual(JSON.parse(fleetList!), JSON.parse(list!), 'the fleet form lists the same tools');
    const tools = (JSON.parse(list!) as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
    for (const name of ['talk_to_elder_rowan', 'remember', 'recall', 'get_elder_rowan_state'])
      assert.ok(tools.includes(name), `tools/list has ${name}`);
    assert.match((JSON.parse(call!) as { content: Array<{ text: string }> }).content[0]!.text, /three silver/);
    const contents = (JSON.parse(read!) as { contents: Array<{ uri: string; text: string }> }).contents;
    assert.equal(contents[0]!.uri, 'agent://elder_rowan/state');
    assert.equal((JSON.parse(contents[0]!.text) as { status: string }).status, 'ready');
  });

  test('without the header an agent answers 401; with [mcp] require_token = false the same command works', async () => {
    const bare = inspectorSnippets()[0]!.replace(/ --header ".*"$/, '');
    assert.doesNotMatch(bare, /--header/);
    await assert.rejects(
      shell(bare.replaceAll(README_PORT, guarded.port), guarded.dir),
      /401|Unauthorized|UNAUTHORIZED|auth_required/i,
      'refused by default (the Inspector then asks for OAuth)',
    );
    const tools = (JSON.parse(await shell(bare.replaceAll(README_PORT, open.port), open.dir)) as { tools: Array<{ name: string }> }).tools;
    assert.ok(
      tools.some((t) => t.name === 'talk_to_elder_rowan'),
      'an agent whose token was turned off answers without it',
    );
  });

  test('the MCP Inspector CLI lists a declared tool with its schema and classes, and a call of it without reason is refused', async () => {
    const port = String(await freePort());
    await startAgent({ id: 'captain_lysa', port: Number(port), config: join(open.dir, 'thymos.toml') });
    const inspector = `npx @modelcontextprotocol/inspector --cli http://127.0.0.1:${port}/mcp`;
    const listed = JSON.parse(await shell(`${inspector} --method tools/list`, open.dir)) as {
      tools: Array<{
        name: string;
        inputSchema: { properties: Record<string, { pattern?: string }>; required?: string[] };
        annotations?: Record<string, boolean>;
      }>;
    };
    const postQuest = listed.tools.find((t) => t.name === 'post_quest');
    assert.ok(postQuest, 'post_quest is listed');
    assert.equal(postQuest.inputSchema.properties.id!.pattern, '^(?:[a-z][a-z0-9_]{0,47})$');
    assert.ok(postQuest.inputSchema.required?.includes('reason'), 'reason is required of a tool that writes');
    assert.equal(postQuest.annotations?.readOnlyHint, false);
    // The Inspector prints the error result and exits 5 (tool_is_error).
    const failed = await shell(
      `${inspector} --method tools/call --tool-name post_quest --tool-arg id=wolves --tool-arg 'title=Wolves' --tool-arg location=north_pasture --tool-arg reward=40`,
      open.dir,
    ).then(
      () => assert.fail('a call without reason succeeded'),
      (err: { code?: number; stdout?: string }) => err,
    );
    assert.equal(failed.code, 5);
    const refused = JSON.parse(failed.stdout!) as { isError?: boolean; content: Array<{ text: string }> };
    assert.equal(refused.isError, true);
    assert.match(refused.content[0]!.text, /^INVALID_INPUT: .*reason/s);
  });

  test('Claude Desktop through mcp-remote: the mcpServers snippet as written, with the token; without the header, the agent whose token is off', async () => {
    const [snippet] = mcpServersSnippets();
    assert.ok(snippet, 'the README shows mcp-remote');
    assert.ok(snippet.args.includes('--header'), 'with the token');
    const args = snippet.args.map((a) => a.replace(README_PORT, guarded.port).replace('<token>', guarded.token));
    const { tools, state } = await throughMcpRemote({ command: snippet.command, args }, guarded.dir);
    assert.ok(tools.includes('talk_to_elder_rowan'));
    assert.deepEqual([state.id, state.status], ['elder_rowan', 'ready']);
    const at = snippet.args.indexOf('--header');
    const plain = snippet.args.filter((_a, i) => i !== at && i !== at + 1).map((a) => a.replace(README_PORT, open.port));
    assert.equal((await throughMcpRemote({ command: snippet.command, args: plain }, open.dir)).state.status, 'ready');
  });
});
