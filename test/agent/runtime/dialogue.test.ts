import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CreateMessageRequest, CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';

import { loadConfig } from '../../../shared/config/thymos-config.js';
import { loadDomainSchema } from '../../../shared/domain/domain-schema.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { ensureEventStream, publishWorldEvent } from '../../../shared/nats/event-stream.js';
import { type EventDecision, EventDecisionSchema } from '../../../shared/protocol/agent-protocol.js';
import { DEFAULT_FLEET_NAMES } from '../../../shared/protocol/fleet-names.js';
import { parseWorldEvent } from '../../../shared/protocol/world-event.js';
import { EventRouter } from '../../../supervisor/events/event-router.js';
import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

type ToolResult = { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: Record<string, unknown> };
type Memory = {
  id: string;
  content: string;
  tags: string[];
  source: { kind: string; by: string; thread?: string; model?: string; event?: string };
  derived_from?: string[];
};

/** A garrison of two: a warden who reasons about danger, and a scribe who does not. */
function writeWorld(dir: string): string {
  const file = join(dir, 'world.pkl');
  writeFileSync(
    file,
    `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
agents {
  ["warden"] {
    persona { name = "Warden Hale"; traits { "disciplined"; "suspicious" }; speechStyle = "clipped, military"; greeting = "Halt. State your business." }
    tags { "guard" }
    goals { "keep the village safe" }
    actions { "raise the alarm"; "send a patrol to the north road"; "carry on with the watch" }
    reasonOnEvents = true
    knowledge { "Wolves come down the north road in a hard winter." }
  }
  ["scribe"] {
    persona { name = "Scribe Ode"; traits { "curious" }; speechStyle = "formal, full of questions" }
    tags { "guard" }
    knowledge { "The granary keys hang in the counting house." }
  }
}
eventFilters { new { agentTags { "guard" }; eventTags { "danger" } } }
`,
  );
  return file;
}

const memoriesOf = async (client: Client, id: string): Promise<Memory[]> =>
  JSON.parse(((await client.readResource({ uri: `agent://${id}/memories` })).contents[0] as { text: string }).text) as Memory[];

describe('offline dialogue and reasoning', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  let ws: Workspace;
  let warden: AgentChild;
  let client: Client;
  let router: EventRouter | undefined;
  const decisions: EventDecision[] = [];
  const call = async (c: Client, name: string, args: Record<string, unknown> = {}) =>
    (await c.callTool({ name, arguments: args })) as ToolResult;

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    ws = createWorkspace({ natsUrl: nats.url, schema: null });
    ws.writeConfig(`${loadConfigText(ws)}\n[domain]\nschema = ${JSON.stringify(writeWorld(ws.dir))}\n`);
    nc = await connect({ servers: nats.url });
    const config = loadConfig(ws.configPath);
    await ensureEventStream(nc, config.events);
    // Events reach agents through a supervisor's router; here one runs on its own.
    router = await EventRouter.start({
      nc,
      names: DEFAULT_FLEET_NAMES,
      domain: await loadDomainSchema(config.domainSchemaPath!),
      settings: config.events,
      hearers: () => ['warden', 'scribe'],
      locationOf: () => null,
      logger: createLogger({ level: 'silent' }),
    });
    nc.subscribe('thymos.agent.*.decision', {
      callback: (_err, msg) => {
        decisions.push(EventDecisionSchema.parse(msg.json()));
      },
    });
    warden = await startAgent({ id: 'warden', port: await freePort(), config: ws.configPath });
    client = await warden.client();
  });

  after(async () => {
    await router?.close();
    await nc?.close();
    await killAllAgents();
    await nats?.stop();
    ws?.dispose();
  });

  test('a reply is composed offline from persona, speech style and what recall found; what it was told becomes a memory of its own', async () => {
    const asked = await call(client, 'talk_to_warden', { message: 'Warden, what comes down the north road in winter?', speaker: 'player' });
    assert.equal(asked.isError, undefined, JSON.stringify(asked));
    const out = asked.structuredContent!;
    // The first line to the player opens the conversation: the persona's greeting comes first, once.
    assert.equal(out.greeting, 'Halt. State your business.');
    assert.equal(asked.content[0]!.text, `Halt. State your business.\n${String(out.reply)}`);
    // Disciplined opener, the fact recall found, and a clipped style: one fact, the military closer.
    assert.equal(out.reply, 'Report, then. I recall this: Wolves come down the north road in a hard winter. That is all.');
    assert.equal(out.emotional_tone, 'stern');
    assert.equal(out.model, 'offline');
    assert.deepEqual(out.learned, []);

    const told = await call(client, 'talk_to_warden', {
      message: 'Warden, the east gate hinge is broken. Can you send a smith?',
      speaker: 'player',
    });
    assert.deepEqual(told.structuredContent!.learned, ['player told me: the east gate hinge is broken.']);
    assert.equal(told.structuredContent!.greeting, undefined, 'the player was greeted already');

    const memories = await memoriesOf(client, 'warden');
    const learned = memories.find((m) => m.tags.includes('learned'))!;
    assert.equal(learned.content, 'player told me: the east gate hinge is broken.');
    assert.equal(learned.source.thread, undefined, 'a learned fact is not a turn of the conversation');
    const turn = memories.find((m) => m.id === learned.derived_from![0])!;
    assert.equal(turn.content, 'player said to me: Warden, the east gate hinge is broken. Can you send a smith?');

    // The thread with the player is its turns in order, each with who said it; replies name the model and the memories they drew on.
    const thread = (await call(client, 'conversation', { speaker: 'player' })).structuredContent!.turns as Memory[];
    assert.deepEqual(
      thread.map((m) => m.source.by),
      ['warden', 'player', 'warden', 'player', 'warden'],
    );
    assert.equal(thread[0]!.content, 'I told player: Halt. State your business.');
    const firstReply = thread[2]!;
    assert.equal(firstReply.source.model, 'offline');
    const knowledge = memories.find((m) => m.source.kind === 'knowledge')!;
    assert.deepEqual(firstReply.derived_from, [knowledge.id]);

    // Asked later, the learned fact grounds the answer, and the line it came from is not repeated beside it.
    const later = await call(client, 'talk_to_warden', { message: 'What is broken at the east gate?', speaker: 'captain' });
    assert.equal(later.structuredContent!.greeting, 'Halt. State your business.', 'a new speaker opens a conversation of their own');
    assert.match(later.structuredContent!.reply as string, /player told me: the east gate hinge is broken\./);
    assert.doesNotMatch(later.structuredContent!.reply as string, /player said to me/);

    const state = (await call(client, 'get_warden_state')).structuredContent!;
    assert.equal(state.llm, undefined, 'offline answers spend nothing and are not counted');
    assert.deepEqual(state.disposition, { mood: 'stern' });
  });

  test("think scores the agent's actions against the situation and its memories; decide picks one with a confidence", async () => {
    const thought = (await call(client, 'think', { situation: 'Tracks of a pack on the north road at dawn' })).structuredContent!;
    const options = thought.options as Array<{ action: string; score: number; reason: string }>;
    assert.equal(options.length, 3);
    assert.equal(options[0]!.action, 'send a patrol to the north road');
    assert.match(options[0]!.reason, /north, road/);
    assert.ok(options[0]!.score > options[1]!.score);
    assert.match((thought.steps as string[]).join('\n'), /What I remember: Wolves come down the north road/);

    const decided = (
      await call(client, 'decide', {
        situation: 'Smoke rises from the granary',
        options: ['fetch water for the granary', 'sound the bell'],
      })
    ).structuredContent!;
    assert.equal(decided.action, 'fetch water for the granary');
    assert.ok((decided.confidence as number) > 0 && (decided.confidence as number) <= 1);

    const bad = await call(client, 'think', { situation: 'x', options: [] });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0]!.text!, /options/);
  });

  test('an active agent with reasonOnEvents decides about a heard event, remembers it and publishes it; a listening one does not reason', async () => {
    const event = parseWorldEvent({ type: 'watch.sighting', tags: ['danger'], payload: { summary: 'Wolves seen on the north road' } });
    await publishWorldEvent(nc, event);
    const decision = await eventually(() => decisions.find((d) => d.event === event.id), 10_000, 'a decision about the sighting');
    assert.equal(decision.agent, 'warden');
    assert.equal(decision.action, 'send a patrol to the north road');
    assert.equal(decision.model, 'offline');
    const memories = await memoriesOf(client, 'warden');
    const recorded = memories.find((m) => m.id === decision.memory)!;
    assert.match(
      recorded.content,
      /^I heard: .*Wolves seen on the north road.*\. I decided to send a patrol to the north road \(confidence/,
    );
    assert.equal(recorded.source.kind, 'reasoning');
    assert.equal(recorded.source.event, event.id);

    await nc.request('thymos.agent.warden.control', JSON.stringify({ op: 'set_mode', mode: 'passive' }), { timeout: 3000 });
    const quiet = parseWorldEvent({ type: 'watch.sighting', tags: ['danger'], payload: { summary: 'A bear by the mill' } });
    await publishWorldEvent(nc, quiet);
    await eventually(
      async () => (await memoriesOf(client, 'warden')).some((m) => m.source.event === quiet.id) || undefined,
      10_000,
      'the listening warden to hear the bear',
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(decisions.filter((d) => d.event === quiet.id).length, 0);
    const refused = await call(client, 'decide', { situation: 'anything' });
    assert.match(refused.content[0]!.text!, /^AGENT_NOT_ACTIVE: warden is listening \(passive\): it does not reason now/);
    await nc.request('thymos.agent.warden.control', JSON.stringify({ op: 'set_mode', mode: 'active' }), { timeout: 3000 });

    // Its earlier decision is not evidence: it holds the patrol's words and would vote for the patrol again.
    const next = (
      await call(client, 'decide', {
        situation: 'Watch sighting: a bear by the mill',
        options: ['chase the bear from the mill', 'send a patrol to the north road'],
      })
    ).structuredContent!;
    assert.equal(next.action, 'chase the bear from the mill', JSON.stringify(next));
  });

  test('told something, stopped (Dormant) and started again, the agent answers with it', async () => {
    await call(client, 'talk_to_warden', { message: 'Warden, the smugglers hide their boats in the reed bank.', speaker: 'player' });
    assert.equal(await warden.stop('SIGTERM'), 0);
    warden = await startAgent({ id: 'warden', port: await freePort(), config: ws.configPath });
    client = await warden.client();
    const answer = await call(client, 'talk_to_warden', { message: 'Where do the smugglers hide their boats?', speaker: 'player' });
    assert.match(answer.structuredContent!.reply as string, /the smugglers hide their boats in the reed bank/);
    const state = (await call(client, 'get_warden_state')).structuredContent!;
    assert.equal((state.disposition as { mood: string }).mood, 'stern', 'the disposition is kept across the restart');
  });

  test('with [llm.dialogue] provider "mcp-sampling", the MCP client that can sample writes the reply; one that cannot gets the offline one', async () => {
    const sampling = createWorkspace({
      natsUrl: undefined,
      schema: null,
      extra: '[llm.dialogue]\nprovider = "mcp-sampling"\nmodel = "claude-hint"\nmax_tokens = 300',
    });
    sampling.writeConfig(`${loadConfigText(sampling)}\n[domain]\nschema = ${JSON.stringify(writeWorld(sampling.dir))}\n`);
    const scribe = await startAgent({ id: 'scribe', port: await freePort(), config: sampling.configPath });
    try {
      const asked: CreateMessageRequest['params'][] = [];
      const sampler = new Client({ name: 'sampling-client', version: '1.0.0' }, { capabilities: { sampling: {} } });
      sampler.setRequestHandler(CreateMessageRequestSchema, async (request) => {
        asked.push(request.params);
        return {
          model: 'client-model-7',
          role: 'assistant',
          content: {
            type: 'text',
            text: '{"message":"The keys hang in the counting house, as you surely know?","emotional_tone":"curious","learned":[]}',
          },
        };
      });
      await sampler.connect(new StreamableHTTPClientTransport(new URL(scribe.url), { requestInit: { headers: scribe.headers() } }));
      const reply = (await sampler.callTool({
        name: 'talk_to_scribe',
        arguments: { message: 'Where are the granary keys?', speaker: 'player' },
      })) as ToolResult;
      assert.equal(reply.isError, undefined, JSON.stringify(reply));
      assert.equal(reply.structuredContent!.reply, 'The keys hang in the counting house, as you surely know?');
      assert.equal(reply.structuredContent!.model, 'mcp-sampling:client-model-7');
      const params = asked[0]!;
      assert.match(params.systemPrompt!, /You are Scribe Ode\./);
      assert.match(params.systemPrompt!, /- The granary keys hang in the counting house\. \(strength/);
      assert.equal(params.maxTokens, 300);
      assert.deepEqual(params.modelPreferences?.hints, [{ name: 'claude-hint' }]);
      assert.deepEqual(params.messages.at(-1), { role: 'user', content: { type: 'text', text: 'player: Where are the granary keys?' } });
      const state = (await sampler.callTool({ name: 'get_scribe_state', arguments: {} })) as ToolResult;
      const llm = state.structuredContent!.llm as { calls: number; input_tokens: number; output_tokens: number };
      assert.equal(llm.calls, 1);
      assert.ok(llm.input_tokens > 50 && llm.output_tokens > 10, JSON.stringify(llm));

      const plain = await scribe.client();
      const offline = (await plain.callTool({
        name: 'talk_to_scribe',
        arguments: { message: 'Where are the granary keys?', speaker: 'guest' },
      })) as ToolResult;
      assert.equal(offline.structuredContent!.model, 'offline');
      assert.match(
        offline.structuredContent!.reply as string,
        /^Now that is a question\. I recall this: The granary keys hang in the counting house\./,
      );
      await sampler.close();
    } finally {
      await scribe.stop();
      sampling.dispose();
    }
  });
});

/** The workspace's thymos.toml as written (it has no [domain] yet). */
function loadConfigText(ws: Workspace): string {
  return readFileSync(ws.configPath, 'utf8');
}
