import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CreateMessageRequest, CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

/**
 * `[llm.dialogue] provider = "mcp-sampling"`: a client that declares `sampling.tools` is sent the
 * agent's granted tools with each sampling request, and its model's `tool_use` runs through the
 * governed path, the result going back as `tool_result`; a client without it is sent no tools.
 */
describe('tool calls through MCP sampling', () => {
  let ws: Workspace;
  let agent: AgentChild;
  const asked: Array<CreateMessageRequest['params']> = [];

  const sampler = async (tools: boolean) => {
    const client = new Client(
      { name: tools ? 'tool-sampler' : 'plain-sampler', version: '1.0.0' },
      { capabilities: { sampling: tools ? { tools: {} } : {} } },
    );
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      asked.push(request.params);
      const p = request.params;
      const answered = p.messages.some((m) => Array.isArray(m.content) && m.content.some((c) => c.type === 'tool_result'));
      // The [llm.extraction] reading of plain words: the one tool offered, with the order the words name.
      if (p.systemPrompt?.startsWith('You map a request'))
        return {
          model: 'client-model',
          role: 'assistant',
          content: {
            type: 'text',
            text: JSON.stringify({ tool: 'lookup_order', arguments: { order_id: /[A-Z]{2}-\d{4}/.exec(JSON.stringify(p.messages))?.[0] } }),
          },
        };
      if (p.tools && !answered)
        return {
          model: 'client-model',
          role: 'assistant',
          stopReason: 'toolUse',
          content: [{ type: 'tool_use', id: 'use-1', name: 'lookup_order', input: { order_id: 'AB-1234' } }],
        };
      return {
        model: 'client-model',
        role: 'assistant',
        content: { type: 'text', text: '{"message":"Your order AB-1234 has shipped.","emotional_tone":"helpful","learned":[]}' },
      };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(agent.url), { requestInit: { headers: agent.headers() } }));
    return client;
  };

  before(async () => {
    ws = createWorkspace({
      schema: null,
      extra: '[llm.dialogue]\nprovider = "mcp-sampling"\nmax_tokens = 200\n[llm.extraction]\nprovider = "mcp-sampling"',
    });
    writeFileSync(join(ws.dir, 'desk.mjs'), `export function lookup(input) { return { order: input.order_id, status: 'shipped' }; }\n`);
    writeFileSync(
      join(ws.dir, 'desk.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents { ["desk"] { persona { name = "Desk" }; capabilities { "lookup_order" } } }
tools {
  ["lookup_order"] {
    description = "Look up an order's status"
    input { ["order_id"] { pattern = #"[A-Z]{2}-\\d{4}"# } }
    sideEffect = "read_only"
    executor = new Script { path = "desk.mjs"; export = "lookup" }
  }
}
`,
    );
    ws.writeConfig(`${readFileSync(ws.configPath, 'utf8')}\n[domain]\nschema = "desk.pkl"\n`);
    agent = await startAgent({ id: 'desk', port: await freePort(), config: ws.configPath });
  });
  after(async () => {
    await killAllAgents();
    ws?.dispose();
  });

  test('a client that samples with tools: its model calls the granted tool, and the result goes back to it', async () => {
    const client = await sampler(true);
    try {
      const r = (await client.callTool({
        name: 'talk_to_desk',
        arguments: { message: 'Has AB-1234 shipped?', speaker: 'customer' },
        _meta: { 'thymos/chain': ['front_desk'] },
      })) as Result;
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.equal(r.structuredContent?.reply, 'Your order AB-1234 has shipped.');
      const steps = r.structuredContent?.tool_calls as Array<{ tool: string; status: string; call_id: string }>;
      assert.deepEqual(
        steps.map((c) => [c.tool, c.status]),
        [['lookup_order', 'ok']],
      );
      const record = ((await client.callTool({ name: 'get_call', arguments: { call_id: steps[0]!.call_id } })) as Result)
        .structuredContent!;
      assert.equal(record.caller, 'sampling:tool-sampler', "the call is the sampling client's model's");
      assert.deepEqual(record.chain, ['front_desk'], 'the chain of Mcp hops the line came through reaches the calls its reply makes');
      const [first, second] = asked.slice(-2);
      assert.deepEqual(
        first!.tools?.map((t) => t.name),
        ['lookup_order'],
      );
      assert.deepEqual(first!.toolChoice, { mode: 'auto' });
      const results = second!.messages.at(-1)!.content as Array<{ type: string; toolUseId: string; content: Array<{ text: string }> }>;
      assert.equal(results[0]!.type, 'tool_result');
      assert.equal(results[0]!.toolUseId, 'use-1');
      assert.match(results[0]!.content[0]!.text, /"status":"ok".*"result":\{"order":"AB-1234","status":"shipped"\}/);
      assert.equal(
        (second!.messages.at(-2)!.content as Array<{ type: string }>)[0]!.type,
        'tool_use',
        "the model's own call precedes its result",
      );
    } finally {
      await client.close();
    }
  });

  test('a client that samples without tools is sent none, and its model answers as before', async () => {
    const client = await sampler(false);
    try {
      const from = asked.length;
      const r = (await client.callTool({
        name: 'talk_to_desk',
        arguments: { message: 'Has AB-1234 shipped?', speaker: 'guest' },
      })) as Result;
      assert.equal(r.structuredContent?.reply, 'Your order AB-1234 has shipped.');
      assert.equal(r.structuredContent?.tool_calls, undefined);
      assert.equal(asked.length - from, 1);
      assert.equal(asked.at(-1)!.tools, undefined);
    } finally {
      await client.close();
    }
  });

  test('sampling cannot stream: a talk asked with a progress token gets the whole reply as one piece', async () => {
    const client = await sampler(false);
    try {
      const pieces: Array<{ progress: number; message?: string | undefined }> = [];
      const r = (await client.callTool(
        { name: 'talk_to_desk', arguments: { message: 'Has AB-1234 shipped yet?', speaker: 'guest' } },
        undefined,
        { onprogress: (p) => pieces.push(p) },
      )) as Result;
      assert.equal(r.structuredContent?.reply, 'Your order AB-1234 has shipped.');
      assert.deepEqual(pieces, [{ progress: 'Your order AB-1234 has shipped.'.length, message: 'Your order AB-1234 has shipped.' }]);
    } finally {
      await client.close();
    }
  });

  test("[llm.extraction] of mcp-sampling: plain words the offline bars refuse are read by the asking client's model; a client that cannot sample gets the offline answer", async () => {
    const words = 'AB-1234, any news, mate?';
    const plain = new Client({ name: 'no-sampler', version: '1.0.0' });
    await plain.connect(new StreamableHTTPClientTransport(new URL(agent.url), { requestInit: { headers: agent.headers() } }));
    const from = asked.length;
    try {
      const offline = (await plain.callTool({ name: 'resolve_intent', arguments: { intent: words } })) as Result;
      assert.notEqual(offline.structuredContent?.outcome, 'call', JSON.stringify(offline.structuredContent));
      assert.equal(offline.structuredContent?.by, undefined);
      assert.equal(offline.structuredContent?.note, undefined, 'no reading was tried, nor failed');
      assert.equal(asked.length, from, 'no client model to ask');
    } finally {
      await plain.close();
    }
    const client = await sampler(false);
    try {
      const r = (await client.callTool({ name: 'resolve_intent', arguments: { intent: words } })) as Result;
      assert.deepEqual(
        [r.structuredContent?.call, r.structuredContent?.by],
        [{ tool: 'lookup_order', arguments: { order_id: 'AB-1234' } }, 'model'],
        JSON.stringify(r.structuredContent),
      );
      assert.match(asked.at(-1)!.systemPrompt ?? '', /- lookup_order \(only reads\): Look up an order's status/);
      const act = (await client.callTool({ name: 'act', arguments: { intent: words, reason: 'the customer asked' } })) as Result;
      assert.equal(act.structuredContent?.by, 'model');
      const record = act.structuredContent?.record as { status: string; result: unknown };
      assert.deepEqual(
        [record.status, record.result],
        ['ok', { order: 'AB-1234', status: 'shipped' }],
        JSON.stringify(act.structuredContent),
      );
    } finally {
      await client.close();
    }
  });
});
