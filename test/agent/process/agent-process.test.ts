import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';

import type { AgentState } from '../../../shared/protocol/agent-protocol.js';
import { type AgentChild, killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

type ToolResult = {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
};

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

function text(result: ToolResult): string {
  return result.content.map((c) => c.text ?? '').join('\n');
}

/** An agent control reply as it comes off the wire, unchecked (a reply has `state` or `error`; the tests assert which). */
interface RawControlReply {
  ok: boolean;
  state: AgentState;
  snapshot_at: string;
  error: { code: string; message: string };
  [field: string]: unknown;
}

async function control(nc: NatsConnection, id: string, body: unknown): Promise<RawControlReply> {
  const msg = await nc.request(`thymos.agent.${id}.control`, typeof body === 'string' ? body : JSON.stringify(body), { timeout: 3000 });
  return msg.json();
}

describe('agent process', () => {
  let nats: TestNatsServer;
  let ws: Workspace;
  let nc: NatsConnection;

  before(async () => {
    nats = await startNatsServer();
    ws = createWorkspace({ natsUrl: nats.url });
    nc = await connect({ servers: nats.url });
  });

  after(async () => {
    await nc?.close();
    await killAllAgents();
    await nats?.stop();
    ws?.dispose();
  });

  describe('an active agent of the village', () => {
    let agent: AgentChild;
    let client: Client;

    before(async () => {
      agent = await startAgent({ id: 'elder_rowan', port: await freePort(), config: ws.configPath });
      client = await agent.client();
    });
    after(async () => {
      assert.equal(await agent.stop('SIGTERM'), 0);
    });

    test('lists its tools, resources and persona prompt to a stock MCP client', async () => {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools, [
        'act',
        'ask_agent',
        'causes',
        'concepts',
        'consolidate',
        'context',
        'conversation',
        'decide',
        'describe_concept',
        'get_elder_rowan_state',
        'link',
        'query_elder_rowan_knowledge',
        'query_world',
        'recall',
        'remember',
        'resolve_intent',
        'send_message',
        'talk_to_elder_rowan',
        'think',
      ]);
      const resources = (await client.listResources()).resources.map((r) => r.uri).sort();
      assert.deepEqual(resources, ['agent://elder_rowan/memories', 'agent://elder_rowan/state']);
      const prompt = await client.getPrompt({ name: 'persona', arguments: { situation: 'a storm is coming' } });
      const promptText = (prompt.messages[0]!.content as { text: string }).text;
      assert.match(promptText, /You are Elder Rowan\./);
      assert.match(promptText, /a storm is coming/);
    });

    test('knows the facts its domain schema gives it from the first start', async () => {
      const result = await call(client, 'query_elder_rowan_knowledge', { query: 'anvil blacksmith owes' });
      assert.match(text(result), /Bram the blacksmith owes the council three silver/);
    });

    test('keeps concepts named by the domain’s aliases and resolves an alias in recall', async () => {
      await call(client, 'remember', { content: 'The smith sharpened the sickle of Mira', importance: 0.6 });
      // Concepts are found off the write's path: ask until the tracker has it.
      let bram: { key: string; name: string; aliases: Array<{ text: string }> } | undefined;
      for (let i = 0; i < 50 && !bram; i++) {
        bram = ((await call(client, 'concepts', { name: 'the smith' })).structuredContent?.concepts as (typeof bram)[])[0];
        if (!bram) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(bram?.key, 'bram_smith');
      assert.equal(bram?.name, 'Bram');
      assert.ok(bram?.aliases.some((a) => a.text === 'the smith'));
      const recalled = await call(client, 'query_elder_rowan_knowledge', { query: 'what has Bram done', k: 3 });
      assert.match(text(recalled), /The smith sharpened the sickle/, 'Bram is searched as the smith too');
    });

    test('links concepts with the domain’s relationship types and walks them', async () => {
      const linked = await call(client, 'link', { from: 'the old badger', to: 'the smith', type: 'trusts', properties: { strength: 0.9 } });
      assert.deepEqual(linked.structuredContent, { from: 'elder_rowan', to: 'bram_smith', type: 'trusts', properties: { strength: 0.9 } });
      const walked = await call(client, 'concepts', { name: 'Elder Rowan', depth: 2 });
      assert.deepEqual(
        (walked.structuredContent?.related as Array<{ key: string }>).map((r) => r.key),
        ['bram_smith'],
      );
      const bad = await call(client, 'link', { from: 'Mira', to: 'Bram', type: 'loves' });
      assert.equal(bad.isError, true);
      assert.match(text(bad), /^INVALID_INPUT: type: no relationship type "loves"; the domain declares trusts, knows/);
    });

    test('remembers a fact and recalls it with a score breakdown', async () => {
      const stored = await call(client, 'remember', { content: 'A dragon burned the mill at dawn', importance: 0.9, tags: ['danger'] });
      assert.equal(stored.isError, undefined, text(stored));
      assert.equal(typeof stored.structuredContent?.id, 'string');
      const recalled = await call(client, 'recall', { query: 'what happened to the mill?', k: 3 });
      const results = recalled.structuredContent?.results as Array<{
        content: string;
        score: { bm25: number; strength: number; final: number };
      }>;
      assert.equal(results[0]!.content, 'A dragon burned the mill at dawn');
      const score = results[0]!.score;
      assert.ok(score.bm25 > 0 && score.bm25 <= 1);
      assert.ok(score.strength > 0.99 && score.strength <= 1, `fresh memory strength ${score.strength}`);
      assert.equal(score.final, Math.round(score.bm25 * score.strength * 10_000) / 10_000);
    });

    test('talks in character, grounded in what recall finds, and records the exchange', async () => {
      const before = (await call(client, 'get_elder_rowan_state')).structuredContent as { memory_count: number; conversations: number };
      const result = await call(client, 'talk_to_elder_rowan', { message: 'Tell me about the dragon and the mill', speaker: 'player' });
      assert.equal(result.isError, undefined, text(result));
      // The first line to the player opens the conversation: his greeting, then the reply.
      assert.equal(result.structuredContent?.greeting, 'Well met, traveller. Sit, and speak plainly.');
      assert.match(text(result), /^Well met, traveller\. Sit, and speak plainly\.\nHmm\. Let me think on that\./);
      assert.match(text(result), /A dragon burned the mill at dawn/);
      const after = (await call(client, 'get_elder_rowan_state')).structuredContent as { memory_count: number; conversations: number };
      assert.equal(after.memory_count, before.memory_count + 3, 'the greeting, the heard line and the reply');
      assert.equal(after.conversations, before.conversations + 1);
      const memories = JSON.parse(
        ((await client.readResource({ uri: 'agent://elder_rowan/memories' })).contents[0] as { text: string }).text,
      ) as Array<{ content: string; source: { thread?: string } }>;
      assert.ok(
        memories.some((m) => m.content === 'player said to me: Tell me about the dragon and the mill' && m.source.thread === 'player'),
      );
    });

    test('asked the same question again and again, it answers from what it knows, not from records of the question', async () => {
      let last = '';
      for (let i = 0; i < 4; i++) {
        last = text(await call(client, 'talk_to_elder_rowan', { message: 'What burned the mill?', speaker: 'player' }));
      }
      assert.match(last, /A dragon burned the mill at dawn/);
      assert.doesNotMatch(last, /player said to me: What burned the mill\?/);
    });

    test('notifies a subscriber of its state resource when its mode changes, and answers control over NATS', async () => {
      const updates: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        updates.push(n.params.uri);
      });
      await client.subscribeResource({ uri: 'agent://elder_rowan/state' });
      const passive = await control(nc, 'elder_rowan', { op: 'set_mode', mode: 'passive' });
      assert.equal(passive.ok, true);
      assert.equal(passive.state.mode, 'passive');
      for (let i = 0; i < 50 && !updates.includes('agent://elder_rowan/state'); i++) await sleep(20);
      assert.ok(updates.includes('agent://elder_rowan/state'), 'state update notification');

      const talk = await call(client, 'talk_to_elder_rowan', { message: 'hello' });
      assert.equal(talk.isError, true);
      assert.match(text(talk), /^AGENT_NOT_ACTIVE: elder_rowan is listening/);
      const remember = await call(client, 'remember', { content: 'should not be stored' });
      assert.equal(remember.isError, true);
      assert.match(text(remember), /^AGENT_NOT_ACTIVE/);
      const read = await call(client, 'recall', { query: 'dragon mill' });
      assert.equal(read.isError, undefined);
      assert.match(text(read), /dragon burned the mill/);
      const state = await client.readResource({ uri: 'agent://elder_rowan/state' });
      assert.equal(JSON.parse((state.contents[0] as { text: string }).text).mode, 'passive');

      const active = await control(nc, 'elder_rowan', { op: 'set_mode', mode: 'active' });
      assert.equal(active.state.mode, 'active');
      const again = await call(client, 'talk_to_elder_rowan', { message: 'And now?' });
      assert.equal(again.isError, undefined);
    });

    test('consolidates when passivated and on demand, and describes concepts by the domain’s concept types', async () => {
      const ids: string[] = [];
      for (const content of [
        'Mira bought nails from Bram',
        'Bram charged Mira too much for the hinges',
        'Mira and Bram shook hands at the fair',
      ]) {
        ids.push((await call(client, 'remember', { content, tags: ['market'] })).structuredContent!.id as string);
      }
      const preview = await call(client, 'consolidate', { tag: 'market', dry_run: true });
      assert.equal(preview.isError, undefined, text(preview));
      assert.equal(preview.structuredContent!.examined, 3);
      assert.equal(preview.structuredContent!.dry_run, true);

      assert.equal((await control(nc, 'elder_rowan', { op: 'set_mode', mode: 'passive' })).state.mode, 'passive');
      const insight = await eventually(async () => {
        const found = await call(client, 'query_elder_rowan_knowledge', { query: 'Mira Bram together', source: 'insight' });
        return (found.structuredContent!.results as Array<{ content: string; derived_from?: string[] }>).find((r) =>
          r.content.startsWith('Bram and Mira'),
        );
      });
      assert.match(insight.content, /Bram and Mira come up together in \d+ memories/);
      for (const id of ids) assert.ok(insight.derived_from?.includes(id), `${id} is a source of ${JSON.stringify(insight)}`);
      assert.match(agent.output(), /"trigger":"passivation"[^\n]*memories consolidated/);
      const refused = await call(client, 'consolidate', {});
      assert.match(text(refused), /^AGENT_NOT_ACTIVE: elder_rowan is listening \(passive\): it consolidates only as a dry run now/);
      await control(nc, 'elder_rowan', { op: 'set_mode', mode: 'active' });
      const again = await call(client, 'consolidate', { tag: 'market' });
      assert.equal(again.isError, undefined, text(again));
      assert.ok((again.structuredContent!.insights as unknown[]).length <= 1, 'the scoped run restates the theme at most once');
      const bad = await call(client, 'consolidate', { since: 'yesterday' });
      assert.equal(bad.isError, true);
      assert.match(text(bad), /since/);

      const named = await call(client, 'recall', { query: 'nails', strategy: 'by_meaning' });
      assert.equal(named.isError, undefined, text(named));
      // No embedding service here: the hybrid strategy falls back to BM25 and says so.
      assert.equal((named.structuredContent!.results as Array<{ score: { strategy: string } }>)[0]?.score.strategy, 'bm25');
      const unknown = await call(client, 'recall', { query: 'nails', strategy: 'sideways' });
      assert.match(text(unknown), /^INVALID_INPUT: strategy: expected bm25, vector, hybrid, cascade, by_meaning; got "sideways"/);

      const cave = await call(client, 'describe_concept', { name: 'the mill', type: 'place', attributes: { kind: 'cave' } });
      assert.match(text(cave), /^INVALID_INPUT: attributes\.kind: expected one of building, outdoors; got "cave"/);
      const mill = await call(client, 'describe_concept', { name: 'the mill', type: 'place', attributes: { kind: 'building' } });
      assert.deepEqual((mill.structuredContent!.concept as { attributes: unknown }).attributes, { kind: 'building' });
    });

    test('answers get_state and snapshot over NATS and refuses malformed control messages with INVALID_INPUT', async () => {
      const state = await control(nc, 'elder_rowan', { op: 'get_state' });
      assert.equal(state.ok, true);
      assert.equal(state.state.pid, agent.pid);
      assert.equal(state.state.nats, 'connected');
      const snap = await control(nc, 'elder_rowan', { op: 'snapshot' });
      assert.equal(snap.ok, true);
      assert.equal(snap.state.last_snapshot_at, snap.snapshot_at);
      for (const bad of ['not json', { op: 'explode' }, { op: 'set_mode', mode: 'sleepy' }, { op: 'get_state', extra: 1 }, [], 'null']) {
        const reply = await control(nc, 'elder_rowan', bad);
        assert.equal(reply.ok, false, JSON.stringify(bad));
        assert.equal(reply.error.code, 'INVALID_INPUT');
      }
      assert.equal((await control(nc, 'elder_rowan', { op: 'get_state' })).ok, true, 'still serving after bad input');
    });

    test('sends heartbeats with its state on its status subject', async () => {
      const sub = nc.subscribe('thymos.agent.elder_rowan.status', { max: 1 });
      for await (const m of sub) {
        const beat = m.json<{ kind: string; state: { id: string; status: string }; rss_bytes: number }>();
        assert.equal(beat.kind, 'heartbeat');
        assert.equal(beat.state.id, 'elder_rowan');
        assert.equal(beat.state.status, 'ready');
        assert.ok(beat.rss_bytes > 0);
      }
    });

    test('refuses a second process on the same agent data promptly, naming the running pid', async () => {
      const started = Date.now();
      const second = await startAgent({ id: 'elder_rowan', port: await freePort(), config: ws.configPath, waitReady: false });
      const code = await second.exited;
      assert.equal(code, 3);
      assert.match(second.output(), new RegExp(`AGENT_ALREADY_RUNNING: agent elder_rowan is already running \\(pid ${agent.pid}`));
      assert.ok(Date.now() - started < 10_000);
      assert.equal((await call(client, 'get_elder_rowan_state')).isError, undefined, 'the first copy is untouched');
    });
  });

  test('SIGTERM snapshots and exits 0; a restart has every memory back', async () => {
    const port = await freePort();
    const first = await startAgent({ id: 'bram_smith', port, config: ws.configPath });
    const client = await first.client();
    for (let i = 0; i < 20; i++) {
      const r = await call(client, 'remember', { content: `Order ${i}: a horseshoe for farmer number ${i}` });
      assert.equal(r.isError, undefined);
    }
    const count = ((await call(client, 'get_bram_smith_state')).structuredContent as { memory_count: number }).memory_count;
    assert.equal(await first.stop('SIGTERM'), 0);
    assert.match(first.output(), /"reason":"stop:SIGTERM","msg":"snapshot saved"/);

    const second = await startAgent({ id: 'bram_smith', port, config: ws.configPath });
    const client2 = await second.client();
    const state = (await call(client2, 'get_bram_smith_state')).structuredContent as {
      memory_count: number;
      last_snapshot_at: string | null;
    };
    assert.equal(state.memory_count, count, 'same memories, and the knowledge facts were not seeded twice');
    assert.notEqual(state.last_snapshot_at, null);
    const hit = await call(client2, 'recall', { query: 'horseshoe farmer 17', k: 1 });
    assert.match(text(hit), /Order 17: a horseshoe for farmer number 17/);
    assert.equal(await second.stop('SIGINT'), 0);
  });

  test('a NATS shutdown request stops the agent with exit code 0', async () => {
    const agent = await startAgent({ id: 'old_fenn', port: await freePort(), config: ws.configPath });
    const reply = await control(nc, 'old_fenn', { op: 'shutdown' });
    assert.equal(reply.ok, true);
    assert.equal(await agent.exited, 0);
  });

  test('consolidates on a schedule, and once more when it stops', async () => {
    const scheduled = createWorkspace({ extra: '[memory]\nconsolidate_every_s = 1' });
    try {
      const agent = await startAgent({ id: 'mira_herbalist', port: await freePort(), config: scheduled.configPath });
      const client = await agent.client();
      for (const content of ['Bram sharpened Mira’s sickle', 'Mira paid Bram in salve', 'Bram and Mira walked to the river'])
        await call(client, 'remember', { content });
      const theme = await eventually(async () => {
        const found = await call(client, 'recall', { query: 'Bram Mira together', source: 'insight', k: 5 });
        return (found.structuredContent!.results as Array<{ content: string; derived_from?: string[] }>).find((r) =>
          r.content.startsWith('Bram and Mira come up together in 3 memories'),
        );
      });
      assert.equal(theme.derived_from?.length, 3);
      // The log line is written asynchronously: it may reach the output a moment after the insight is recallable.
      await eventually(
        () => (/"trigger":"schedule"[^\n]*memories consolidated/.test(agent.output()) ? true : undefined),
        10_000,
        'the scheduled consolidation logged',
      );
      assert.equal(await agent.stop('SIGTERM'), 0);
      assert.match(agent.output(), /"trigger":"passivation"[^\n]*memories consolidated/);
    } finally {
      scheduled.dispose();
    }
  });

  test('an id the domain schema does not define runs with a default persona', async () => {
    const agent = await startAgent({ id: 'scratch_pad', port: await freePort(), config: ws.configPath, mode: 'passive' });
    const client = await agent.client();
    const state = (await call(client, 'get_scratch_pad_state')).structuredContent as { name: string; defined: boolean; mode: string };
    assert.deepEqual([state.name, state.defined, state.mode], ['Scratch Pad', false, 'passive']);
    assert.match(agent.output(), /not defined by the domain schema; running with a default persona/);
    assert.equal(await agent.stop(), 0);
  });

  test('a port in use fails with PORT_IN_USE, leaves no folder for an agent that never ran, and the data free for the next start', async () => {
    const holder = await startAgent({ id: 'mira_herbalist', port: await freePort(), config: ws.configPath });
    const blocked = await startAgent({ id: 'tomas_innkeeper', port: holder.port, config: ws.configPath, waitReady: false });
    assert.equal(await blocked.exited, 3);
    assert.match(blocked.output(), /PORT_IN_USE: port \d+ on 127\.0\.0\.1 is already in use/);
    assert.equal(existsSync(join(ws.dir, 'data', 'agents', 'tomas_innkeeper')), false, 'a refused first start leaves no data/agents/<id>/');
    const retry = await startAgent({ id: 'tomas_innkeeper', port: await freePort(), config: ws.configPath });
    assert.equal(await retry.stop(), 0);
    const again = await startAgent({ id: 'tomas_innkeeper', port: holder.port, config: ws.configPath, waitReady: false });
    assert.equal(await again.exited, 3);
    assert.ok(existsSync(join(ws.dir, 'data', 'agents', 'tomas_innkeeper', 'db')), 'the folder of an agent that has run is kept');
    assert.equal(await holder.stop(), 0);
  });

  test('a call in flight when SIGTERM arrives finishes before the process exits', async () => {
    const behavior = join(ws.dir, 'slow-behavior.mjs');
    writeFileSync(
      behavior,
      `export function createBehavior({ definition }) {
         return { async talk(ctx, req) {
           await new Promise((r) => setTimeout(r, 700));
           await ctx.remember({ content: 'slow reply to ' + req.message, source: { kind: 'dialogue', by: req.speaker } });
           return { reply: definition.persona.name + ' took a while', grounding: [] };
         } };
       }`,
    );
    const slow = createWorkspace({ natsUrl: nats.url, schema: null, agent: [`behavior = ${JSON.stringify(behavior)}`] });
    try {
      const agent = await startAgent({ id: 'captain_lysa', port: await freePort(), config: slow.configPath });
      const client = await agent.client();
      const pending = call(client, 'talk_to_captain_lysa', { message: 'report' });
      await sleep(200);
      agent.child.kill('SIGTERM');
      const result = await pending;
      assert.equal(result.isError, undefined, text(result));
      assert.equal(text(result), 'Captain Lysa took a while');
      assert.equal(await agent.exited, 0);
      const again = await startAgent({ id: 'captain_lysa', port: await freePort(), config: slow.configPath });
      const c2 = await again.client();
      assert.match(text(await call(c2, 'recall', { query: 'slow reply report' })), /slow reply to report/);
      assert.equal(await again.stop(), 0);
    } finally {
      slow.dispose();
    }
  });
});
