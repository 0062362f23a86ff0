import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';

import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

type ToolResult = { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: Record<string, unknown> };
type Chat = { messages: Array<{ role: string; content: string }>; response_format?: unknown };

/**
 * An agent whose `[llm.dialogue]` points at a local chat-completions server (standing in for
 * the paid service): it talks through the model, grounded in what it remembers, and a
 * passivation cancels the call in flight.
 */
describe('dialogue through an openai-compatible model', () => {
  let nats: TestNatsServer;
  let ws: Workspace;
  let nc: NatsConnection;
  let agent: AgentChild;
  let client: Client;
  const requests: Chat[] = [];
  /** How the next request is answered; a request left unanswered hangs. */
  let answer: (chat: Chat, res: ServerResponse) => void = () => undefined;
  let closed = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      res.on('close', () => {
        if (!res.writableFinished) closed++;
      });
      const chat = JSON.parse(raw) as Chat;
      requests.push(chat);
      answer(chat, res);
    });
  });
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult;

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    nats = await startNatsServer();
    process.env.THYMOS_TEST_LLM_KEY = 'sk-local-test';
    const port = (server.address() as AddressInfo).port;
    ws = createWorkspace({
      natsUrl: nats.url,
      extra: `[llm.dialogue]\nprovider = "openai-compatible"\nbase_url = "http://127.0.0.1:${port}/v1"\nmodel = "stand-in-1"\napi_key_env = "THYMOS_TEST_LLM_KEY"\ntimeout_ms = 20000\ninput_cost_per_1k = 0.5\noutput_cost_per_1k = 1.5`,
    });
    nc = await connect({ servers: nats.url });
    agent = await startAgent({ id: 'elder_rowan', port: await freePort(), config: ws.configPath });
    client = await agent.client();
  });

  after(async () => {
    await nc?.close();
    await killAllAgents();
    await nats?.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    ws?.dispose();
  });

  test('the reply comes from the model, which was given the persona and what recall found with its strength', async () => {
    await call('remember', { content: 'The miller hid the silver coins under the old bridge', importance: 0.9 });
    answer = (_chat, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: 'stand-in-1',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: '{"message":"Under the old bridge, traveller.","emotional_tone":"wary","actions":["lowers his voice"]}',
              },
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 180, completion_tokens: 20 },
        }),
      );
    const reply = await call('talk_to_elder_rowan', { message: 'Where did the miller hide the silver coins?', speaker: 'player' });
    assert.equal(reply.isError, undefined, JSON.stringify(reply));
    assert.equal(reply.structuredContent!.reply, 'Under the old bridge, traveller.');
    assert.equal(reply.structuredContent!.emotional_tone, 'wary');
    assert.deepEqual(reply.structuredContent!.actions, ['lowers his voice']);

    const chat = requests.at(-1)!;
    const system = chat.messages[0]!;
    assert.equal(system.role, 'system');
    assert.match(system.content, /You are Elder Rowan\./);
    assert.match(system.content, /measured, archaic/);
    assert.match(system.content, /- The miller hid the silver coins under the old bridge \(strength [01](\.\d+)?\)/);
    assert.equal(chat.messages.at(-1)!.content, 'player: Where did the miller hide the silver coins?');
    // The line opened the conversation: the model was told the elder had greeted the player, and the reply carries it.
    assert.deepEqual(chat.messages.at(-2), { role: 'assistant', content: 'Well met, traveller. Sit, and speak plainly.' });
    assert.equal(reply.structuredContent!.greeting, 'Well met, traveller. Sit, and speak plainly.');
    assert.deepEqual(chat.response_format, { type: 'json_object' });

    const state = (await call('get_elder_rowan_state', {})).structuredContent!;
    // 180 input tokens at 0.5 per 1,000 and 20 output tokens at 1.5 per 1,000.
    assert.deepEqual(state.llm, { calls: 1, input_tokens: 180, output_tokens: 20, cost: 0.12 });
    assert.equal(reply.structuredContent!.model, 'openai-compatible:stand-in-1');
    const remembered = await call('recall', { query: 'old bridge traveller', source: 'dialogue' });
    assert.match(JSON.stringify(remembered.structuredContent), /I told player: Under the old bridge, traveller\./);
  });

  test('the context tool shows the packet the model was given: tiers within the budget, the conversation as turns, what was left out', async () => {
    const packet = (await call('context', { message: 'Where did the miller hide the silver coins?', speaker: 'player' }))
      .structuredContent as {
      budget_tokens: number;
      used_tokens: number;
      token_count: string;
      items: Array<{ id: string; tier: string; content: string; thread?: string }>;
      left_out: unknown[];
    };
    assert.equal(packet.budget_tokens, 1500, '[llm.dialogue] context_tokens default');
    assert.equal(packet.token_count, 'ceil(characters / 4)');
    assert.ok(packet.used_tokens > 0 && packet.used_tokens <= packet.budget_tokens);
    const fact = packet.items.find((i) => /silver coins under the old bridge/.test(i.content));
    assert.equal(fact?.tier, 'facts');
    // The exchange of the first test is the player's conversation: its turns come in as turns, in order, the greeting first.
    const turns = packet.items.filter((i) => i.thread === 'player').map((i) => i.content);
    assert.ok(
      turns.length >= 3 && /^I told player: Well met, traveller/.test(turns[0]!) && /player said to me/.test(turns[1]!),
      JSON.stringify(turns),
    );
    // What the model was given in that first exchange carried the same fact under the packet's heading.
    assert.match(requests[0]!.messages[0]!.content, /What you know \(strength 0\.\.1, weaker is hazier\):\n- The miller hid/);
    const reasoning = (await call('context', { message: 'Thieves were seen at the old bridge', use: 'reasoning' })).structuredContent as {
      use: string;
      items: Array<{ thread?: string }>;
    };
    assert.equal(reasoning.use, 'reasoning');
    assert.ok(
      reasoning.items.every((i) => i.thread === undefined),
      'no conversation in a reasoning packet',
    );
    const refused = await call('context', { message: '' });
    assert.equal(refused.isError, true, 'an empty message is refused at the edge');
  });

  test('a model that answers in prose even after the repair is heard: its words are the reply, both calls are counted, and the state says so', async () => {
    answer = (_chat, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: 'stand-in-1',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'The mill? Hal keeps it, as his father did.' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 100, completion_tokens: 10 },
        }),
      );
    const before = requests.length;
    const reply = await call('talk_to_elder_rowan', { message: 'Who keeps the mill?', speaker: 'player' });
    assert.equal(reply.isError, undefined, JSON.stringify(reply));
    assert.equal(reply.structuredContent!.reply, 'The mill? Hal keeps it, as his father did.');
    assert.equal(requests.length - before, 2, 'asked once, then once more with the repair');
    const state = (await call('get_elder_rowan_state', {})).structuredContent!;
    // The first test's call (180 + 20 tokens, 0.12), then two prose answers of 100 + 10 tokens.
    assert.deepEqual(state.llm, { calls: 3, input_tokens: 380, output_tokens: 40, cost: 0.25, prose_replies: 1 });
  });

  test('passivating the agent cancels the model call in flight and closes its request', async () => {
    answer = () => undefined; // the model hangs
    const before = requests.length;
    const pending = call('talk_to_elder_rowan', { message: 'Tell me a long story', speaker: 'player' });
    await eventually(() => requests.length > before || undefined, 10_000, 'the model request');
    const msg = await nc.request('thymos.agent.elder_rowan.control', JSON.stringify({ op: 'set_mode', mode: 'passive' }), {
      timeout: 3000,
    });
    assert.equal((msg.json() as { state: { mode: string } }).state.mode, 'passive');
    const result = await pending;
    assert.equal(result.isError, true);
    assert.match(result.content[0]!.text!, /^CANCELLED: elder_rowan was passivated/);
    await eventually(() => closed > 0 || undefined, 5000, 'the request to be closed');
  });

  test("an agent's own llm settings in the domain schema override thymos.toml for that agent only; a bad override stops it, naming the path", async () => {
    const port = (server.address() as AddressInfo).port;
    const own = createWorkspace({ schema: null });
    const world = join(own.dir, 'world.pkl');
    writeFileSync(
      world,
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents {
  ["bard"] {
    persona { name = "Bard Wynn"; traits { "jovial" } }
    llm { dialogue { provider = "openai-compatible"; baseUrl = "http://127.0.0.1:${port}/v1"; model = "bard-model"; temperature = 0.2 } }
  }
  ["mute"] { persona { name = "Mute Tam" } }
  ["broken"] {
    persona { name = "Broken Bo" }
    llm { dialogue { provider = "openai-compatible" } }
  }
}
`,
    );
    own.writeConfig(`${readFileSync(own.configPath, 'utf8')}\n[domain]\nschema = ${JSON.stringify(world)}\n`);
    try {
      answer = (_chat, res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            model: 'bard-model',
            choices: [{ index: 0, message: { role: 'assistant', content: '{"message":"A song for you!"}' }, finish_reason: 'stop' }],
          }),
        );
      const bard = await startAgent({ id: 'bard', port: await freePort(), config: own.configPath });
      const sung = (await (await bard.client()).callTool({ name: 'talk_to_bard', arguments: { message: 'Sing!' } })) as ToolResult;
      assert.equal(sung.structuredContent!.reply, 'A song for you!');
      const chat = requests.at(-1)! as Chat & { model: string; temperature: number };
      assert.equal(chat.model, 'bard-model');
      assert.equal(chat.temperature, 0.2);
      await bard.stop();

      const before = requests.length;
      const mute = await startAgent({ id: 'mute', port: await freePort(), config: own.configPath });
      const said = (await (await mute.client()).callTool({ name: 'talk_to_mute', arguments: { message: 'Sing!' } })) as ToolResult;
      assert.equal(said.structuredContent!.model, 'offline');
      assert.equal(requests.length, before, 'an agent without an override stays offline, as thymos.toml says');
      await mute.stop();

      const broken = await startAgent({ id: 'broken', port: await freePort(), config: own.configPath, waitReady: false });
      assert.notEqual(await broken.exited, 0);
      assert.match(
        broken.output(),
        /CONFIG_INVALID[^\n]*agents\.broken\.llm\.dialogue: [^\n]*base_url: expected base_url for provider "openai-compatible"/,
      );
    } finally {
      own.dispose();
    }
  });

  test('with [llm.consolidation] set, the model words each new theme from its sources; a failing model leaves the draft', async () => {
    const port = (server.address() as AddressInfo).port;
    const own = createWorkspace({
      extra: `[llm.consolidation]\nprovider = "openai-compatible"\nbase_url = "http://127.0.0.1:${port}/v1"\nmodel = "summariser"\nmax_retries = 0`,
    });
    try {
      const mira = await startAgent({ id: 'mira_herbalist', port: await freePort(), config: own.configPath });
      const c = await mira.client();
      for (const content of [
        'Elder Rowan asked Bram to forge a new plough',
        'Bram told Elder Rowan the iron ran out',
        'Elder Rowan paid Bram in grain',
      ]) {
        await c.callTool({ name: 'remember', arguments: { content } });
      }
      answer = (_chat, res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            model: 'summariser',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: '{"insight":"Bram and the elder keep dealing over the new plough."}' },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 90, completion_tokens: 12 },
          }),
        );
      const before = requests.length;
      const report = (await c.callTool({ name: 'consolidate', arguments: {} })) as ToolResult;
      const insights = report.structuredContent!.insights as Array<{ content: string; sources: string[] }>;
      assert.ok(insights.length > 0, JSON.stringify(report));
      assert.ok(
        insights.every((i) => i.content === 'Bram and the elder keep dealing over the new plough.'),
        JSON.stringify(insights),
      );
      const asked = requests.slice(before).map((r) => r.messages.at(-1)!.content);
      assert.match(asked[0]!, /- Bram told Elder Rowan the iron ran out/);
      assert.match(asked[0]!, /A draft: .*come up together in 3 memories/);
      const stored = (await c.callTool({
        name: 'recall',
        arguments: { query: 'dealing over the new plough', source: 'insight' },
      })) as ToolResult;
      assert.match(JSON.stringify(stored.structuredContent), /Bram and the elder keep dealing over the new plough\./);
      const state = (await c.callTool({ name: 'get_mira_herbalist_state', arguments: {} })) as ToolResult;
      assert.equal((state.structuredContent!.llm as { calls: number }).calls, insights.length);

      await c.callTool({ name: 'remember', arguments: { content: 'Bram and Elder Rowan shook hands on the plough' } });
      answer = (_chat, res) => res.writeHead(503).end('overloaded');
      const fallback = (await c.callTool({ name: 'consolidate', arguments: {} })) as ToolResult;
      assert.equal(fallback.isError, undefined, JSON.stringify(fallback));
      const drafted = fallback.structuredContent!.insights as Array<{ content: string }>;
      assert.ok(
        drafted.some((i) => /come up together in 4 memories/.test(i.content)),
        JSON.stringify(drafted),
      );
      await mira.stop();
    } finally {
      own.dispose();
    }
  });

  test('with [llm.extraction] set, the model finds what a memory names and the other names it gives them; a failing model leaves them to the offline extractor', async () => {
    const port = (server.address() as AddressInfo).port;
    const own = createWorkspace({
      extra: `[llm.extraction]\nprovider = "openai-compatible"\nbase_url = "http://127.0.0.1:${port}/v1"\nmodel = "extractor"\nmax_retries = 0`,
    });
    // The stand-in reads the numbered texts it is given and names Hal, the grey miller, in those that mention him.
    answer = (chat, res) => {
      const texts = chat.messages
        .at(-1)!
        .content.split('\n')
        .map((line) => ({
          concepts: /Hal\b/.test(line)
            ? [
                { name: 'Hal', type: 'person', aliases: ['the grey miller'] },
                { name: 'Mill Guild', type: 'organization' },
              ]
            : [],
        }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: 'extractor',
          choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify({ texts }) }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 60, completion_tokens: 20 },
        }),
      );
    };
    const before = requests.length;
    try {
      const mira = await startAgent({ id: 'mira_herbalist', port: await freePort(), config: own.configPath });
      const c = await mira.client();
      const describe = async (name: string) =>
        ((await c.callTool({ name: 'concepts', arguments: { name } })) as ToolResult).structuredContent!.concepts as Array<{
          key: string;
          name: string;
          type: string;
          aliases: Array<{ text: string; source: string }>;
        }>;
      await c.callTool({ name: 'remember', arguments: { content: 'Hal ground the flour for the guild at dawn' } });
      const hal = await eventually(async () => (await describe('the grey miller'))[0], 15_000, 'Hal, known by the alias the model gave');
      assert.deepEqual([hal.key, hal.name, hal.type], ['hal', 'Hal', 'person']);
      assert.deepEqual(
        hal.aliases.map((a) => [a.text, a.source]),
        [['the grey miller', 'extracted']],
      );
      assert.equal((await describe('Mill Guild'))[0]?.type, 'organization', 'a concept the offline tagger would not find');
      const asked = requests.slice(before).find((r) => /Hal ground the flour/.test(r.messages.at(-1)!.content))!;
      assert.match(asked.messages[0]!.content, /people, places and organisations/);
      assert.match(asked.messages.at(-1)!.content, /^\d+\. Hal ground the flour for the guild at dawn$/m);
      const state = (await c.callTool({ name: 'get_mira_herbalist_state', arguments: {} })) as ToolResult;
      assert.ok((state.structuredContent!.llm as { calls: number }).calls >= 1, 'the extraction calls are counted');

      answer = (_chat, res) => res.writeHead(503).end('overloaded');
      await c.callTool({ name: 'remember', arguments: { content: 'Mira met Tomas at the tavern' } });
      const tomas = await eventually(async () => (await describe('Tomas'))[0], 15_000, 'Tomas, found offline when the model failed');
      assert.equal(tomas.type, 'person');
      await mira.stop();
    } finally {
      own.dispose();
    }
  });

  test('a key variable that is not set stops the agent from starting, naming the variable', async () => {
    const bad = createWorkspace({
      extra:
        '[llm.dialogue]\nprovider = "openai-compatible"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "THYMOS_TEST_UNSET_KEY"',
    });
    try {
      const failed = await startAgent({ id: 'mira_herbalist', port: await freePort(), config: bad.configPath, waitReady: false });
      assert.notEqual(await failed.exited, 0);
      assert.match(
        failed.output(),
        /CONFIG_INVALID[^\n]*llm\.dialogue\.api_key_env: the environment variable THYMOS_TEST_UNSET_KEY is not set in this agent's environment, which in a fleet is the supervisor's[^\n]*thymos down/,
      );
    } finally {
      bad.dispose();
    }
  });
});
