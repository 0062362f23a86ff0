import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { describeTally, fuzzMcpTools, Rng, tally } from '../../helpers/fuzz.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

const SECRET = 'tok-5ecret-value-0f-the-0rders-service';

/** What the local orders service saw: method, raw URL as sent, headers. */
const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];

function ordersService(): Server {
  return createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const url = new URL(req.url!, 'http://127.0.0.1');
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (url.pathname === '/orders/AB-1234') return json(200, { status: 'shipped', items: 2 });
      if (url.pathname === '/orders/ZZ-0000') return json(404, { error: 'no such order' });
      if (url.pathname === '/echo') return json(200, { authorization: req.headers.authorization ?? '' });
      if (url.pathname === '/echo-fail') return json(500, { error: `bad token ${req.headers.authorization ?? ''}` });
      if (url.pathname === '/slow') return void setTimeout(() => json(200, { late: true }), 5000);
      if (url.pathname === '/big') return json(200, { blob: 'x'.repeat(10_000) });
      if (url.pathname === '/away') {
        res.writeHead(302, { location: 'http://127.0.0.2:9/stolen' });
        return res.end();
      }
      if (url.pathname === '/notes' && req.method === 'POST')
        return json(201, { saved: JSON.parse(body) as unknown, key: req.headers['idempotency-key'] });
      json(404, { error: `nothing at ${url.pathname}` });
    });
  });
}

function domain(port: number): string {
  return `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents {
  ["desk"] { persona { name = "Desk" }; capabilities { "tag:orders"; "echo"; "echo_fail"; "slow"; "big"; "away"; "note"; "wait_a_while"; "hang"; "shout"; "purge"; "stamp"; "!forbidden_*" } }
  ["bystander"] { persona { name = "Bystander" } }
}
local service = "http://127.0.0.1:${port}"
tools {
  ["lookup_order"] {
    description = "Look up an order: status and items"
    tags { "orders" }
    examples { "where is my order AB-1234" }
    input { ["order_id"] { pattern = #"[A-Z]{2}-\\d{4}"#; description = "e.g. AB-1234" } }
    output { ["status"] { type = "string" } ["items"] { type = "integer" } }
    sideEffect = "read_only"
    executor = new Http { url = "\\(service)/orders/{order_id}"; headers { ["Authorization"] = new Secret { env = "ORDERS_TOKEN"; prefix = "Bearer " } } }
  }
  ["order_by_any_id"] {
    description = "Look up an order by any text"
    tags { "orders" }
    input { ["id"] {} ["expand"] { required = false } }
    sideEffect = "read_only"
    executor = new Http { url = "\\(service)/orders/{id}?expand={expand}" }
  }
  ["forbidden_lookup"] {
    description = "Granted by tag, taken back by name"
    tags { "orders" }
    sideEffect = "read_only"
    executor = new Http { url = "\\(service)/orders/AB-1234" }
  }
  ["echo"] {
    description = "Echoes the Authorization header back"
    sideEffect = "read_only"
    executor = new Http { url = "\\(service)/echo"; headers { ["Authorization"] = new Secret { env = "ORDERS_TOKEN"; prefix = "Bearer " } } }
  }
  ["echo_fail"] {
    description = "Fails, echoing the Authorization header"
    sideEffect = "read_only"
    executor = new Http { url = "\\(service)/echo-fail"; headers { ["Authorization"] = new Secret { env = "ORDERS_TOKEN" } } }
  }
  ["slow"] { description = "Answers after 5 s"; sideEffect = "read_only"; timeoutMs = 300; executor = new Http { url = "\\(service)/slow" } }
  ["big"] { description = "A large answer"; sideEffect = "read_only"; outputLimitBytes = 1000; executor = new Http { url = "\\(service)/big" } }
  ["away"] { description = "Redirects to another origin"; sideEffect = "read_only"; executor = new Http { url = "\\(service)/away" } }
  ["note"] {
    description = "Saves a note"
    input { ["order_id"] {} ["text"] { max = 200 } }
    sideEffect = "writes_external"
    idempotencyKey = "note-{order_id}"
    executor = new Http { method = "POST"; url = "\\(service)/notes"; body { "order_id"; "text" } }
  }
  ["wait_a_while"] { description = "A script that ignores nothing"; sideEffect = "writes_local"; timeoutMs = 300; executor = new Script { path = "tools.mjs"; export = "waitAWhile" } }
  ["hang"] { description = "A script that waits until stopped"; input { ["token"] { pattern = "hang-[0-9a-f]{32}" } }; sideEffect = "writes_external"; timeoutMs = 60000; executor = new Script { path = "tools.mjs"; export = "hang" } }
  ["shout"] { description = "A script that shouts"; input { ["word"] {} }; sideEffect = "read_only"; executor = new Script { path = "tools.mjs"; export = "shout" } }
  ["stamp"] { description = "A program that stamps a word"; input { ["word"] {} }; sideEffect = "read_only"; executor = new Subprocess { command = ${JSON.stringify(process.execPath)}; args { "stamp.mjs"; "{word}" } } }
  ["purge"] { description = "Deletes everything"; sideEffect = "irreversible"; permission = "admin"; executor = new Script { path = "tools.mjs"; export = "shout" } }
}
`;
}

const SCRIPT = `
import { writeFileSync } from 'node:fs';
export async function waitAWhile(input, ctx) {
  await new Promise((resolve, reject) => {
    const t = setTimeout(resolve, 5000);
    ctx.signal.addEventListener('abort', () => { clearTimeout(t); writeFileSync(new URL('./aborted.txt', import.meta.url), String(ctx.signal.reason?.code)); reject(ctx.signal.reason); });
  });
  return 'done';
}
export async function hang(input, ctx) {
  writeFileSync(new URL('./hanging.txt', import.meta.url), ctx.callId);
  await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
  return 'woke';
}
export function shout(input, ctx) {
  if (input.word === 'fail') throw new Error('no shouting today');
  return { said: input.word.toUpperCase(), by: ctx.agent, caller: ctx.caller, call: ctx.callId };
}
`;

const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const errorOf = (r: CallToolResult) =>
  r._meta?.['thymos/error'] as { code: string; message: string; details?: { status?: number } } | undefined;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('declared tools on a real agent: Http and Script executors through the governed path', () => {
  let ws: Workspace;
  let service: Server;
  let agent: AgentChild;
  let client: Client;

  before(async () => {
    service = ordersService();
    await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
    ws = createWorkspace({ schema: null });
    writeFileSync(join(ws.dir, 'tools.pkl'), domain((service.address() as AddressInfo).port));
    writeFileSync(join(ws.dir, 'tools.mjs'), SCRIPT);
    writeFileSync(join(ws.dir, 'stamp.mjs'), "process.stdout.write('stamped ' + process.argv[2] + ' for ' + process.env.THYMOS_AGENT)");
    ws.writeConfig(
      [
        'data_dir = "data"',
        '[domain]',
        'schema = "tools.pkl"',
        '[agent]',
        'nats_wait_ms = 200',
        '[log]',
        'level = "debug"',
        '[memory]',
        'concepts = false',
      ].join('\n'),
    );
    agent = await startAgent({ id: 'desk', port: await freePort(), config: ws.configPath, env: { ...process.env, ORDERS_TOKEN: SECRET } });
    client = await agent.client();
  });

  after(async () => {
    await killAllAgents();
    await new Promise((r) => service.close(r));
    ws.dispose();
  });

  test('tools/list carries each granted tool with its JSON Schema, annotations and output schema; nothing ungranted', async () => {
    const tools = (await client.listTools()).tools;
    const byName = new Map(tools.map((t) => [t.name, t]));
    const lookup = byName.get('lookup_order')!;
    assert.ok(lookup, 'lookup_order is listed');
    const orderId = (lookup.inputSchema.properties as Record<string, { pattern?: string; description?: string }>).order_id!;
    assert.equal(orderId.pattern, '^(?:[A-Z]{2}-\\d{4})$');
    assert.equal(orderId.description, 'e.g. AB-1234');
    assert.deepEqual([...(lookup.inputSchema.required ?? [])].sort(), ['order_id']);
    assert.equal(lookup.annotations?.readOnlyHint, true);
    assert.equal(lookup.annotations?.openWorldHint, true);
    assert.ok(lookup.outputSchema?.properties?.status, 'the declared output is its outputSchema');
    const note = byName.get('note')!;
    assert.deepEqual(
      [...(note.inputSchema.required ?? [])].sort(),
      ['order_id', 'reason', 'text'],
      'reason is required of a tool with side effects',
    );
    assert.equal(note.annotations?.idempotentHint, true);
    assert.equal(byName.get('purge')!.annotations?.destructiveHint, true);
    assert.equal(byName.has('forbidden_lookup'), false, '"!forbidden_*" takes back what "tag:orders" granted');
    assert.ok(byName.has('get_call'));
    const catalogue = JSON.parse(
      ((await client.readResource({ uri: 'agent://desk/tools' })).contents[0] as { text: string }).text,
    ) as Array<{ name: string; examples: string[] }>;
    assert.deepEqual(catalogue.map((t) => t.name).sort(), [...byName.keys()].filter((n) => byName.get(n)!._meta?.['thymos/tool']).sort());
    assert.deepEqual(catalogue.find((t) => t.name === 'lookup_order')!.examples, ['where is my order AB-1234']);
    assert.ok(!JSON.stringify(catalogue).includes('127.0.0.1'), 'the catalogue says nothing of executors');
  });

  test('Http: success with structured content, the secret sent only as a header, and the call remembered', async () => {
    const r = await call(client, 'lookup_order', { order_id: 'AB-1234' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.structuredContent, { status: 'shipped', items: 2 });
    const got = seen.at(-1)!;
    assert.equal(got.url, '/orders/AB-1234');
    assert.equal(got.headers.authorization, `Bearer ${SECRET}`);
    const callId = (r._meta?.['thymos/call'] as { call_id: string }).call_id;
    const record = (await call(client, 'get_call', { call_id: callId })).structuredContent as {
      status: string;
      tool: string;
      caller: string;
    };
    assert.deepEqual([record.status, record.tool, record.caller], ['ok', 'lookup_order', 'mcp:thymos-test']);
    const hits = (await call(client, 'recall', { query: 'order AB-1234' })).structuredContent as {
      results: Array<{ content: string; source: { kind: string } }>;
    };
    assert.ok(
      hits.results.some((h) => h.source.kind === 'tool_call' && h.content.includes('lookup_order')),
      'recall finds what the agent did',
    );
  });

  test('Http: non-2xx, timeout, output cap and a cross-origin redirect are coded tool errors', async () => {
    const notFound = await call(client, 'lookup_order', { order_id: 'ZZ-0000' });
    assert.equal(errorOf(notFound)?.code, 'TOOL_FAILED');
    assert.equal(errorOf(notFound)?.details?.status, 404);
    assert.equal(errorOf(await call(client, 'slow', {}))?.code, 'TOOL_TIMEOUT');
    assert.equal(errorOf(await call(client, 'big', {}))?.code, 'TOOL_OUTPUT_TOO_LARGE');
    const away = await call(client, 'away', {});
    assert.equal(errorOf(away)?.code, 'TOOL_FAILED');
    assert.match(errorOf(away)!.message, /another origin/);
  });

  test('Http: no input changes the origin or the shape of the path', async () => {
    const before = seen.length;
    for (const id of [
      '..',
      '.',
      '%2e%2e',
      '%2E.',
      '..%2f',
      '../admin',
      '@evil.test',
      '//evil.test',
      'a\r\nX-Injected: 1',
      'AB-1234/../admin',
      'AB-1234/../../admin',
    ]) {
      const sent = seen.length;
      const r = await call(client, 'order_by_any_id', { id, expand: 'items&admin=1' });
      if (seen.length === sent) {
        assert.equal(errorOf(r)?.code, 'INVALID_INPUT', `${JSON.stringify(id)} is refused before any request`);
        continue;
      }
      // Sent encoded: whatever the service answers, the request went where the template says.
      const got = seen.at(-1)!;
      const path = got.url.split('?')[0]!;
      assert.equal(path.split('/').length, 3, `${JSON.stringify(id)} stays one segment: ${got.url}`);
      assert.ok(path.startsWith('/orders/') && !got.url.includes('admin=1') && got.headers['x-injected'] === undefined, got.url);
    }
    assert.ok(seen.length > before, 'values that are safe once encoded are sent, encoded');
    // A pattern the whole value must match: a matching prefix followed by more is refused before any request.
    const n = seen.length;
    const r = await call(client, 'lookup_order', { order_id: 'AB-1234/../admin' });
    assert.equal(errorOf(r)?.code, 'INVALID_INPUT');
    assert.equal(seen.length, n, 'nothing was sent');
  });

  test('a call with side effects needs a reason; the body is the named fields; the idempotency key reaches the service', async () => {
    const refused = await call(client, 'note', { order_id: 'AB-1234', text: 'fragile' });
    assert.equal(errorOf(refused)?.code, 'INVALID_INPUT');
    assert.match(errorOf(refused)!.message, /reason/);
    const r = await call(client, 'note', { order_id: 'AB-1234', text: 'fragile', reason: 'the customer asked' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(JSON.parse(seen.at(-1)!.body), { order_id: 'AB-1234', text: 'fragile' });
    assert.equal(seen.at(-1)!.headers['idempotency-key'], 'note-AB-1234');
  });

  test("a repeated idempotency key answers with the earlier call from the agent's database, and nothing reaches the service", async () => {
    const before = seen.length;
    const args = { order_id: 'CD-5678', text: 'leave at the door', reason: 'the customer asked' };
    const first = await call(client, 'note', args);
    const again = await call(client, 'note', { ...args, reason: 'asked again' });
    assert.equal(seen.length, before + 1, 'one request');
    const meta = (r: CallToolResult) => r._meta?.['thymos/call'] as { call_id: string; replayed?: boolean; idempotency_key: string };
    assert.equal(meta(again).call_id, meta(first).call_id);
    assert.equal(meta(again).replayed, true);
    assert.equal(errorOf(await call(client, 'note', { ...args, text: 'other' }))?.code, 'IDEMPOTENCY_CONFLICT');
    const bad = (await client.callTool({
      name: 'shout',
      arguments: { word: 'x' },
      _meta: { 'thymos/idempotency_key': 'two words' },
    })) as CallToolResult;
    assert.equal(errorOf(bad)?.code, 'INVALID_INPUT');
    assert.match(errorOf(bad)!.message, /_meta\.thymos\/idempotency_key: expected an idempotency key/);
    const tilde = (await client.callTool({
      name: 'shout',
      arguments: { word: 'x' },
      _meta: { 'thymos/idempotency_key': 'quest~2' },
    })) as CallToolResult;
    assert.equal(errorOf(tilde)?.code, 'INVALID_INPUT', 'a "~" would spell a later generation of the key "quest"');
    assert.match(errorOf(tilde)!.message, /_meta\.thymos\/idempotency_key: a key may not hold "~"/);
  });

  test('Script: a result, a throw as TOOL_FAILED, and the signal fired at the timeout', async () => {
    const r = await call(client, 'shout', { word: 'hello' });
    assert.deepEqual(JSON.parse((r.content[0] as { text: string }).text).said, 'HELLO');
    assert.equal(errorOf(await call(client, 'shout', { word: 'fail' }))?.code, 'TOOL_FAILED');
    const t0 = Date.now();
    const slow = await call(client, 'wait_a_while', { reason: 'testing the timeout' });
    assert.equal(errorOf(slow)?.code, 'TOOL_TIMEOUT');
    assert.ok(Date.now() - t0 < 4000, 'answered at the timeout, not when the script would have ended');
    const aborted = await eventually(
      () => (existsSync(join(ws.dir, 'aborted.txt')) ? readFileSync(join(ws.dir, 'aborted.txt'), 'utf8') : undefined),
      10_000,
      'the script told of the abort',
    );
    assert.equal(aborted, 'TOOL_TIMEOUT', "the script's signal fired with the timeout as its reason");
  });

  test('Subprocess: a program run by the agent, its option-looking input refused over MCP', async () => {
    const r = await call(client, 'stamp', { word: 'wax' });
    assert.equal((r.content[0] as { text: string }).text, 'stamped wax for desk');
    const injected = await call(client, 'stamp', { word: '--inspect=0.0.0.0:9229' });
    assert.equal(errorOf(injected)?.code, 'INVALID_INPUT');
    assert.match(errorOf(injected)!.message, /starts with "-"/);
  });

  test('an admin tool is refused without [tools] allow_admin, and recorded as refused', async () => {
    const r = await call(client, 'purge', { reason: 'cleaning up' });
    assert.equal(errorOf(r)?.code, 'TOOL_DENIED');
    const record = (await call(client, 'get_call', { call_id: (r._meta?.['thymos/call'] as { call_id: string }).call_id }))
      .structuredContent as { status: string };
    assert.equal(record.status, 'refused');
  });

  test("a secret's value is in no result, record, memory, log line or database file", async () => {
    const r = await call(client, 'echo', {});
    assert.ok(!JSON.stringify(r).includes(SECRET), 'the echoed header is redacted in the result');
    assert.match(JSON.stringify(r), /\[secret ORDERS_TOKEN\]/);
    const failed = await call(client, 'echo_fail', {});
    assert.equal(errorOf(failed)?.code, 'TOOL_FAILED');
    assert.ok(!JSON.stringify(failed).includes(SECRET), 'nor in an error that quotes it');
    assert.match(errorOf(failed)!.message, /bad token \[secret ORDERS_TOKEN\]/);
    const memories = (await client.readResource({ uri: 'agent://desk/memories' })).contents[0] as { text: string };
    assert.ok(!memories.text.includes(SECRET));
    await agent.stop();
    assert.ok(!agent.output().includes(SECRET), 'not in the log');
    for (const f of filesUnder(join(ws.dir, 'data'))) assert.ok(!readFileSync(f).includes(SECRET), `not in ${f}`);
    agent = await startAgent({ id: 'desk', port: agent.port, config: ws.configPath, env: { ...process.env, ORDERS_TOKEN: SECRET } });
    client = await agent.client();
  });

  test('fuzzed calls of the declared tools are answered, accepted or with a stable code, and the agent keeps serving', async () => {
    const t = tally('declared tool calls');
    await fuzzMcpTools(client, 300, new Rng(47), t);
    assert.equal(t.cases, 300);
    assert.ok(t.accepted > 0 && Object.keys(t.refused).length > 0, describeTally(t));
    const r = await call(client, 'lookup_order', { order_id: 'AB-1234' });
    assert.deepEqual(r.structuredContent, { status: 'shipped', items: 2 });
  });

  test('a call cut off by a crash is found interrupted at the next start, and neither it nor a retry under its key runs again', async () => {
    // Only a caller that knows the token's shape makes it hang (a fuzzed call never does).
    void client
      .callTool({
        name: 'hang',
        arguments: { token: `hang-${'0'.repeat(32)}`, reason: 'testing a crash' },
        _meta: { 'thymos/idempotency_key': 'hang-once' },
      })
      .catch(() => undefined);
    const callId = await eventually(
      () => (existsSync(join(ws.dir, 'hanging.txt')) ? readFileSync(join(ws.dir, 'hanging.txt'), 'utf8') : undefined),
      10_000,
      'the call running',
    );
    // Killed as a crash would: the client is left open (closing it would cancel the call first).
    process.kill(agent.pid, 'SIGKILL');
    assert.equal(await agent.exited, 'SIGKILL');
    rmSync(join(ws.dir, 'hanging.txt'));
    agent = await startAgent({ id: 'desk', port: agent.port, config: ws.configPath, env: { ...process.env, ORDERS_TOKEN: SECRET } });
    client = await agent.client();
    const record = (await call(client, 'get_call', { call_id: callId })).structuredContent as {
      status: string;
      error?: { message: string };
    };
    assert.equal(record.status, 'interrupted', JSON.stringify(record));
    assert.match(record.error!.message, /whether it took effect is not known/);
    assert.equal(existsSync(join(ws.dir, 'hanging.txt')), false, 'not run again');
    // Its tool does not say the service honours the key (keyHonoured): the caller's retry with the same key answers the interrupted call, and nothing runs.
    const retried = await client.callTool({
      name: 'hang',
      arguments: { token: `hang-${'0'.repeat(32)}`, reason: 'retrying' },
      _meta: { 'thymos/idempotency_key': 'hang-once' },
    });
    const answer = (retried._meta as Record<string, { status?: string; call_id?: string; replayed?: boolean }>)['thymos/call'];
    assert.deepEqual([answer?.status, answer?.call_id, answer?.replayed], ['interrupted', callId, true], JSON.stringify(retried));
    assert.equal(existsSync(join(ws.dir, 'hanging.txt')), false, 'not run again by the retry');
  });

  test('a Listening agent runs read-only tools and refuses the others', async () => {
    await agent.stop();
    agent = await startAgent({
      id: 'desk',
      port: agent.port,
      config: ws.configPath,
      mode: 'passive',
      env: { ...process.env, ORDERS_TOKEN: SECRET },
    });
    client = await agent.client();
    const ok = await call(client, 'lookup_order', { order_id: 'AB-1234' });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    const refused = await call(client, 'note', { order_id: 'AB-1234', text: 'x', reason: 'testing' });
    assert.equal(errorOf(refused)?.code, 'AGENT_NOT_ACTIVE');
    await eventually(() => (agent.output().includes('"tool":"note"') ? true : undefined), 10_000, 'the refused call logged');
  });
});

describe('an agent without capabilities has none of the declared tools', () => {
  let ws: Workspace;
  after(async () => {
    await killAllAgents();
    ws.dispose();
  });

  test('tools/list has only its own tools', async () => {
    ws = createWorkspace({ schema: null });
    writeFileSync(join(ws.dir, 'tools.pkl'), domain(9));
    writeFileSync(join(ws.dir, 'tools.mjs'), SCRIPT);
    writeFileSync(join(ws.dir, 'stamp.mjs'), "process.stdout.write('stamped ' + process.argv[2] + ' for ' + process.env.THYMOS_AGENT)");
    ws.writeConfig(['data_dir = "data"', '[domain]', 'schema = "tools.pkl"', '[agent]', 'nats_wait_ms = 200'].join('\n'));
    const agent = await startAgent({ id: 'bystander', port: await freePort(), config: ws.configPath });
    const names = (await (await agent.client()).listTools()).tools.map((t) => t.name);
    assert.ok(!names.includes('lookup_order') && !names.includes('echo'), names.join(', '));
    assert.ok(names.includes('recall'));
  });
});
