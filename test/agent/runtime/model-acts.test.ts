import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';

import type { EventDecision } from '../../../shared/protocol/agent-protocol.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';

type Chat = {
  messages: Array<{ role: string; content: string | null }>;
  tools?: Array<{ function: { name: string } }>;
  tool_choice?: string;
};

const QUEST = {
  id: 'wolves',
  title: 'Drive the wolves off the north pasture',
  location: 'north_pasture',
  reward: 40,
  reason: 'wolves took two sheep from the north pasture',
};
const ACTION = 'send the watch to the north pasture';
const READ_QUEST = { id: 'wolves_again', title: 'See the wolves off the north pasture again', location: 'north_pasture', reward: 30 };

/**
 * The village's captain, told of the wolves, posts the quest herself when her model says so:
 * `[llm.reasoning]` points at a local chat-completions stand-in that asks for `post_quest`
 * when it is offered tools, and the call runs through her governed path.
 */
describe('a model that acts: the captain decides about the wolves and posts the quest through her model', () => {
  const seen: Chat[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const chat = JSON.parse(raw) as Chat;
      seen.push(chat);
      const system = chat.messages[0]?.content ?? '';
      const json = (content: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            model: 'stand-in-1',
            choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify(content) }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 20, completion_tokens: 10 },
          }),
        );
      // The [llm.extraction] model: plain words read to one of the tools offered, and the concepts of what she remembers (none here).
      if (system.startsWith('You map a request')) return void json({ tool: 'post_quest', arguments: READ_QUEST });
      if (/people, places and organisations/.test(system))
        return void json({ texts: (chat.messages.at(-1)?.content ?? '').split('\n').map(() => ({ concepts: [] })) });
      const answered = chat.messages.some((m) => m.role === 'tool');
      const message =
        chat.tools && !answered && chat.tool_choice === 'auto'
          ? {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'post_quest', arguments: JSON.stringify(QUEST) } }],
            }
          : {
              role: 'assistant',
              content: JSON.stringify(
                chat.tools
                  ? { action: ACTION, confidence: 0.9, reason: 'the watch goes, and adventurers are asked' }
                  : { steps: ['wolves are a danger'], options: [{ action: ACTION, score: 0.9, reason: 'wolves' }] },
              ),
            };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: 'stand-in-1',
          choices: [{ index: 0, message, finish_reason: 'stop' }],
          usage: { prompt_tokens: 20, completion_tokens: 10 },
        }),
      );
    });
  });
  let tf: TestFleet;

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const model = ['provider = "openai-compatible"', `base_url = "${url}"`, 'model = "stand-in-1"', 'timeout_ms = 20000'];
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[llm.reasoning]', ...model, '[llm.extraction]', ...model]);
  });
  after(async () => {
    await tf?.dispose();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('the wolves alarm: her decision carries the call, the quest is on the board with her as giver, and the call is hers, made by her model', async () => {
    const { fleet } = tf;
    const decisions: EventDecision[] = [];
    const feed = fleet.decisions((d) => decisions.push(d), { agent: 'captain_lysa' });
    try {
      const report = await fleet.reconcile({ global: { player_location: 'gatehouse' } });
      assert.ok(report.started.includes('captain_lysa'), JSON.stringify(report));
      await fleet.publish({
        type: 'village.alarm',
        tags: ['danger'],
        payload: { summary: 'Wolves took two sheep from the north pasture' },
      });
      const decision = await eventually(
        () => decisions.find((d) => /Wolves took two sheep/.test(d.heard)),
        60_000,
        "the captain's decision",
      );
      assert.equal(decision.action, ACTION);
      assert.deepEqual(
        decision.tool_calls?.map((c) => [c.tool, c.status]),
        [['post_quest', 'ok']],
        JSON.stringify(decision),
      );
      const quest = await fleet.world.get('quest', 'wolves');
      assert.equal(quest?.giver, 'captain_lysa');
      assert.equal(quest?.title, QUEST.title);
      const offered = seen.filter((c) => c.tools).flatMap((c) => c.tools!.map((t) => t.function.name));
      assert.deepEqual([...new Set(offered)], ['post_quest'], 'she is offered only what she is granted');
      const captain = await fleet.agent('captain_lysa');
      const call = (await captain.callTool({ name: 'get_call', arguments: { call_id: decision.tool_calls![0]!.call_id } })) as {
        structuredContent?: Record<string, unknown>;
      };
      assert.equal(call.structuredContent?.caller, 'model:reasoning');
      assert.equal(call.structuredContent?.reason, QUEST.reason);
    } finally {
      feed.close();
    }
  });

  test('act in words the offline bars refuse: her extraction model reads them as post_quest, and the quest is posted through her governed path', async () => {
    const { fleet } = tf;
    const captain = await fleet.agent('captain_lysa');
    const act = (await captain.callTool({
      name: 'act',
      arguments: { intent: 'wolves again. sort it.', reason: 'the shepherd asked at the gate' },
    })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
    assert.ok(!act.isError, JSON.stringify(act));
    const answer = act.structuredContent as { call?: { tool: string }; by?: string; record?: { call_id: string; status: string } };
    assert.deepEqual([answer.call?.tool, answer.by], ['post_quest', 'model'], JSON.stringify(act.structuredContent));
    const quest = await fleet.world.get('quest', READ_QUEST.id);
    assert.equal(quest?.giver, 'captain_lysa');
    assert.equal(quest?.title, READ_QUEST.title);
    const reading = seen.find((c) => (c.messages[0]?.content ?? '').startsWith('You map a request'))!;
    assert.match(reading.messages.at(-1)!.content ?? '', /^Request: wolves again\. sort it\.$/);
    assert.match(reading.messages[0]!.content ?? '', /- post_quest \(changes something\)/, 'offered what she is granted');
    assert.equal(answer.record?.status, 'ok');
    const call = (await captain.callTool({ name: 'get_call', arguments: { call_id: answer.record!.call_id } })) as {
      structuredContent?: Record<string, unknown>;
    };
    assert.equal(call.structuredContent?.reason, 'the shepherd asked at the gate');
  });
});
