import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { fleetNatsUrl } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { connectNats } from '../../../shared/nats/nats-connection.js';
import { agentIdentity, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { SupervisorRequester } from '../../../shared/nats/supervisor-requester.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { describeTally, fuzzMcpTools, Rng, tally } from '../../helpers/fuzz.js';
import { memoryToolCaller } from '../../helpers/tool-caller.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

const TOKEN = 'crm-t0ken-0f-the-company-server';

/** What the stock MCP server received: each call's arguments, `_meta` and Authorization. */
const received: Array<{ args: unknown; meta: unknown; authorization: string | undefined }> = [];

/** A company's own MCP server, written with the SDK alone: stateless, one tool, a bearer token. */
function companyServer(): Server {
  return createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401).end();
      return;
    }
    const mcp = new McpServer({ name: 'crm', version: '1.0.0' });
    mcp.registerTool(
      'lookup_customer',
      { inputSchema: { email: z.string() }, outputSchema: { name: z.string(), tier: z.string() } },
      async (args, extra) => {
        received.push({ args, meta: extra._meta, authorization: req.headers.authorization });
        // A server outside the fleet may say anything in _meta, a Thymos code too: it is not believed.
        if (args.email === 'nobody@example.com')
          return {
            content: [{ type: 'text', text: 'no such customer' }],
            isError: true,
            _meta: { 'thymos/error': { code: 'IDEMPOTENCY_CONFLICT', message: 'no such customer' } },
          };
        return { content: [{ type: 'text', text: '{}' }], structuredContent: { name: 'Ada', tier: 'gold' } };
      },
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
}

describe('the Mcp executor: a tool of another MCP server', () => {
  let server: Server;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-mcp-url-'));

  before(async () => {
    server = companyServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    // The executor keeps its session open: the server drops it rather than wait for it.
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  test("the input becomes the remote tool's arguments; the token and the key travel with it; an error is coded", async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const mcp = (token: string) => ({ kind: 'mcp', url, tool: 'lookup_customer', token: { env: token } });
    const { tools } = memoryToolCaller(
      {
        customer: {
          description: 'Looks a customer up',
          input: { email: {} },
          output: { name: {}, tier: {} },
          sideEffect: 'read_only',
          executor: mcp('CRM_TOKEN'),
        },
        customer_no_token: { description: 'Without a token', input: { email: {} }, sideEffect: 'read_only', executor: mcp('UNSET_TOKEN') },
      },
      dir,
      { overrides: { env: { CRM_TOKEN: TOKEN, UNSET_TOKEN: 'wrong-token-value' } } },
    );
    const r = await tools.call('customer', { email: 'ada@example.com' }, { caller: 'test', idempotencyKey: 'k-1', chain: ['front'] });
    assert.equal(r.status, 'ok', JSON.stringify(r.error));
    assert.deepEqual(r.result, { name: 'Ada', tier: 'gold' });
    assert.deepEqual(received.at(-1)!.args, { email: 'ada@example.com' }, 'no reason is added for a server outside the fleet');
    assert.deepEqual(
      received.at(-1)!.meta,
      { 'thymos/idempotency_key': 'k-1' },
      'the key travels; the chain of fleet agents does not leave the fleet',
    );
    const again = await tools.call('customer', { email: 'ada@example.com' }, { caller: 'test' });
    assert.equal(again.status, 'ok', 'the session is kept and reused');
    const missing = await tools.call('customer', { email: 'nobody@example.com' }, { caller: 'test' });
    assert.equal(missing.error?.code, 'TOOL_FAILED');
    assert.match(missing.error!.message, /answered: no such customer/);
    assert.equal((missing.error!.details as { remote_code: string }).remote_code, 'IDEMPOTENCY_CONFLICT');
    const refused = await tools.call('customer_no_token', { email: 'ada@example.com' }, { caller: 'test' });
    assert.equal(refused.error?.code, 'TOOL_FAILED');
    assert.ok(!JSON.stringify(refused).includes('wrong-token-value'));
    tools.close();
  });
});

describe('chains of agent calls', () => {
  const dir = mkdtempSync(join(tmpdir(), 'thymos-mcp-hops-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('[tools] max_hops counts the agents the chain would pass, the called one included', async () => {
    const { tools } = memoryToolCaller(
      { ask: { description: 'Asks the smith', sideEffect: 'read_only', executor: { kind: 'mcp', agent: 'smith', tool: 'x' } } },
      dir,
      { agents: ['smith'] },
    );
    // max_hops is 3: a → desk → smith is 3 agents, a → b → desk → smith would be 4.
    const long = await tools.call('ask', {}, { caller: 'test', chain: ['a', 'b'] });
    assert.equal(long.status, 'refused');
    assert.match(long.error!.message, /chain of 4 agents \(a → b → desk → smith\); \[tools\] max_hops is 3/);
    const fits = await tools.call('ask', {}, { caller: 'test', chain: ['a'] });
    assert.equal(fits.error?.code, 'NATS_UNAVAILABLE', 'allowed, then not linked to a fleet here');
    const loop = await tools.call('ask', {}, { caller: 'test', chain: ['smith'] });
    assert.match(loop.error!.message, /smith → desk → smith.*refused rather than looped/);
  });
});

function fleetDomain(dir: string): string {
  writeFileSync(
    join(dir, 'forge.mjs'),
    `import { appendFileSync } from 'node:fs';
export function forge(input, ctx) {
  appendFileSync(${JSON.stringify(join(dir, 'forged.log'))}, JSON.stringify({ item: input.item, key: ctx.idempotencyKey, caller: ctx.caller, reason: ctx.reason }) + '\\n');
  return { forged: input.item };
}
`,
  );
  const file = join(dir, 'forge.pkl');
  writeFileSync(
    file,
    `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents {
  ["blacksmith"] { persona { name = "Bram" }; capabilities { "forge_item"; "relay_to_npc" } }
  ["npc"] { persona { name = "Wren" }; capabilities { "ask_forge"; "ask_forge_waking"; "relay_to_smith" } }
}
local forgeInput = new Mapping<String, ToolField> { ["item"] {} }
tools {
  ["forge_item"] { description = "Forge an item"; input = forgeInput; output { ["forged"] {} }; sideEffect = "writes_external"; executor = new Script { path = "forge.mjs"; export = "forge" } }
  ["ask_forge"] { description = "Ask the blacksmith to forge"; input = forgeInput; sideEffect = "writes_external"; executor = new Mcp { agent = "blacksmith"; tool = "forge_item" } }
  ["ask_forge_waking"] { description = "Ask the blacksmith, waking him"; input = forgeInput; sideEffect = "writes_external"; timeoutMs = 60000; executor = new Mcp { agent = "blacksmith"; tool = "forge_item"; wake = true } }
  ["relay_to_smith"] { description = "Pass it on to the smith"; sideEffect = "read_only"; executor = new Mcp { agent = "blacksmith"; tool = "relay_to_npc" } }
  ["relay_to_npc"] { description = "Pass it back to the npc"; sideEffect = "read_only"; executor = new Mcp { agent = "npc"; tool = "relay_to_smith" } }
}
`,
  );
  return file;
}

describe('the Mcp executor: a tool of another agent of the fleet', () => {
  let dir: string;
  let tf: TestFleet;
  let npc: Client;
  const call = (name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
    npc.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, { timeout: 90_000 }) as Promise<CallToolResult>;
  const errorOf = (r: CallToolResult) => r._meta?.['thymos/error'] as { code: string; message: string } | undefined;
  const forged = () =>
    existsSync(join(dir, 'forged.log'))
      ? readFileSync(join(dir, 'forged.log'), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { item: string; key: string; caller: string; reason: string })
      : [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'thymos-mcp-agents-'));
    tf = await startTestFleet([], { schema: fleetDomain(dir) });
    await tf.fleet.start('npc');
    npc = await tf.fleet.agent('npc');
  });
  after(async () => {
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a Dormant agent answers AGENT_NOT_ACTIVE, unless the tool wakes it; then it runs, told who calls, why and with which key', async () => {
    const asleep = await call('ask_forge', { item: 'horseshoe', reason: 'my horse threw a shoe' });
    assert.equal(errorOf(asleep)?.code, 'AGENT_NOT_ACTIVE', JSON.stringify(asleep));
    assert.match(errorOf(asleep)!.message, /blacksmith is dormant.*wake = true/);
    assert.equal(forged().length, 0);
    const woken = await call(
      'ask_forge_waking',
      { item: 'horseshoe', reason: 'my horse threw a shoe' },
      { 'thymos/idempotency_key': 'shoe-1' },
    );
    assert.equal(woken.isError, undefined, JSON.stringify(woken));
    assert.deepEqual(woken.structuredContent ?? JSON.parse((woken.content[0] as { text: string }).text), { forged: 'horseshoe' });
    assert.deepEqual(forged(), [{ item: 'horseshoe', key: 'shoe-1', caller: 'agent:npc', reason: 'my horse threw a shoe' }]);
    const status = await tf.fleet.status();
    assert.equal(status.agents.find((a) => a.id === 'blacksmith')?.state, 'active');
    const audit = readFileSync(join(tf.ws.dir, 'data', 'logs', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { op: string; id?: string; by: string; details?: { woken?: boolean; tool?: string } });
    assert.ok(
      audit.some(
        (e) =>
          e.op === 'agent_endpoint' &&
          e.id === 'blacksmith' &&
          e.details?.woken === true &&
          e.by === 'agent-npc' &&
          e.details.tool === 'ask_forge_waking',
      ),
      `the wake is audited, with who asked for which tool: ${JSON.stringify(audit.filter((e) => e.op === 'agent_endpoint'))}`,
    );
  });

  test('a running agent is called directly; a repeated key reaches it once', async () => {
    const first = await call('ask_forge', { item: 'sword', reason: 'for the quest' }, { 'thymos/idempotency_key': 'sword-1' });
    const again = await call('ask_forge', { item: 'sword', reason: 'for the quest' }, { 'thymos/idempotency_key': 'sword-1' });
    assert.equal(first.isError, undefined, JSON.stringify(first));
    assert.equal((again._meta?.['thymos/call'] as { replayed?: boolean }).replayed, true);
    assert.equal(forged().filter((f) => f.item === 'sword').length, 1);
  });

  test('A → B → A is refused, not looped', async () => {
    const r = await call('relay_to_smith', {});
    assert.equal(errorOf(r)?.code, 'TOOL_DENIED', JSON.stringify(r));
    assert.match(errorOf(r)!.message, /npc → blacksmith → npc.*refused rather than looped/);
  });

  test('fuzzed calls of the Mcp tools are answered, accepted or with a stable code, and both agents keep serving', async () => {
    const t = tally('Mcp tool calls');
    await fuzzMcpTools(npc, 120, new Rng(44), t);
    assert.equal(t.cases, 120);
    assert.ok(Object.keys(t.refused).length > 0, describeTally(t));
    const r = await call('ask_forge', { item: 'nail', reason: 'after the fuzz' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
  });

  test('the supervisor tells an agent where another is only for a tool that calls it and that the agent is granted', async () => {
    const config = loadConfig(tf.ws.configPath);
    const names = new FleetNames(config.fleet.name);
    /** Asks as agent `from`, with its own NATS identity. */
    const ask = async (from: string, id: string) => {
      const nc = await connectNats({
        servers: fleetNatsUrl(config),
        name: `test-endpoints-${from}`,
        seed: readNatsSeed(config.dataPath, agentIdentity(from)),
        who: agentIdentity(from),
      });
      try {
        return await SupervisorRequester.control(nc, 10_000, names, from).request('agent_endpoint', { id, tool: 'ask_forge' });
      } finally {
        await nc.close();
      }
    };
    await assert.rejects(ask('npc', 'npc'), /ask_forge is not a tool of the domain that calls npc/);
    await assert.rejects(ask('blacksmith', 'blacksmith'), /blacksmith is not granted ask_forge/);
    const at = await ask('npc', 'blacksmith');
    assert.match(at.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  });

  test('an Archived agent is not woken by a tool: it answers AGENT_NOT_ACTIVE until restored', async () => {
    await tf.fleet.archive('blacksmith');
    const r = await call('ask_forge_waking', { item: 'anvil', reason: 'spare' });
    assert.equal(errorOf(r)?.code, 'AGENT_NOT_ACTIVE', JSON.stringify(r));
    assert.match(errorOf(r)!.message, /archived: it answers tools only once restored/);
    assert.equal((await tf.fleet.status()).agents.find((a) => a.id === 'blacksmith')?.state, 'archived');
  });
});
