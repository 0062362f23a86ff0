import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { loadConfig } from '../../shared/config/thymos-config.js';
import { isThymosError } from '../../shared/errors/errors.js';
import { readAgentToken } from '../../shared/platform/agent-token.js';
import { type ChatExchange, type ChatRequest, ChatStandIn, completion, dialoguePieces, streamPieces } from '../helpers/chat-stand-in.js';
import { eventually, startTestFleet, type TestFleet } from '../helpers/fleet.js';

type Turn = { content: string; tags: string[] };

/**
 * Replies that stream: `talk_to_<id>` passes the reply on as the model writes it (MCP progress
 * notifications; `fleet.talk`'s `onText`), a cancel stops the model's request, and a stream that
 * breaks off ends coded. The model is a local stand-in that streams slowly.
 */
describe('replies that stream', () => {
  let standIn: ChatStandIn;
  let tf: TestFleet;
  const turns = async (id: string, speaker: string): Promise<Turn[]> => {
    const result = await (await tf.fleet.agent(id)).callTool({ name: 'conversation', arguments: { speaker } });
    return (result.structuredContent as { turns: Turn[] }).turns;
  };
  /** Until `id` is active: a start a busy machine let fail, or a restart pm2 made, is waited out. */
  const running = (id: string) =>
    eventually(
      async () =>
        (await tf.fleet.status()).agents.find((a) => a.id === id)?.state === 'active' ? true : (await tf.fleet.start(id), undefined),
      120_000,
      `${id} to be active`,
    );
  const memoryCount = async (id: string): Promise<number> => {
    const state = await (await tf.fleet.agent(id)).callTool({ name: `get_${id}_state`, arguments: {} });
    return (state.structuredContent as { memory_count: number }).memory_count;
  };

  before(async () => {
    standIn = await ChatStandIn.start();
    tf = await startTestFleet([
      '[lifecycle]',
      'min_dwell_ms = 0',
      '[llm.dialogue]',
      'provider = "openai-compatible"',
      `base_url = "${standIn.baseUrl}"`,
      'model = "stand-in-1"',
      'timeout_ms = 20000',
      'max_retries = 0',
    ]);
    await running('elder_rowan');
    await running('captain_lysa');
  });
  after(async () => {
    await tf?.dispose();
    await standIn?.stop();
  });

  test('the pieces arrive while the model still writes, in order, and add up to the answer', async () => {
    const message = 'The miller tends the wheel, and has since the flood of the old year.';
    let lastPieceAt = 0;
    standIn.answer = async (_chat, res, exchange) => {
      await streamPieces(res, dialoguePieces(message, 6), { delayMs: 30, exchange });
      lastPieceAt = performance.now();
    };
    const pieces: Array<{ text: string; at: number }> = [];
    const answer = await tf.fleet.talk('elder_rowan', 'Who tends the mill?', {
      speaker: 'ana',
      onText: (text) => pieces.push({ text, at: performance.now() }),
    });
    assert.equal(answer.reply, message);
    assert.equal(answer.greeting, 'Well met, traveller. Sit, and speak plainly.');
    assert.equal(pieces.map((p) => p.text).join(''), answer.text);
    assert.equal(answer.text, `${answer.greeting}\n${message}`);
    assert.ok(pieces.length > 5, `${pieces.length} pieces`);
    assert.ok(pieces[1]!.at < lastPieceAt, 'the first words of the reply came before the model had finished');
    assert.equal(standIn.exchanges.at(-1)!.request.stream, true);
  });

  test('without a progress token nothing changes: the model is asked whole and the answer is the same shape', async () => {
    standIn.answer = (chat, res) =>
      completion(res, JSON.stringify({ message: chat.stream ? 'streamed' : 'Whole, as before.', emotional_tone: 'calm' }));
    const elder = await tf.fleet.agent('elder_rowan');
    const result = await elder.callTool({ name: 'talk_to_elder_rowan', arguments: { message: 'And the bridge?', speaker: 'ana' } });
    assert.equal((result.structuredContent as { reply: string }).reply, 'Whole, as before.');
    assert.notEqual(standIn.exchanges.at(-1)!.request.stream, true);
    const quiet = await tf.fleet.talk('elder_rowan', 'And the well?', { speaker: 'ana' });
    assert.equal(quiet.text, 'Whole, as before.');
  });

  test("a cancel mid-reply stops the model's request, and the words said so far stay in the conversation, cut", async () => {
    let exchange: ChatExchange | undefined;
    standIn.answer = async (_chat, res, ex) => {
      exchange = ex;
      await streamPieces(
        res,
        dialoguePieces('Listen well: the wolves come down from the ridge when the moon is thin, and the sheep know it first.', 4),
        { delayMs: 60, exchange: ex },
      );
    };
    const stop = new AbortController();
    const heard: string[] = [];
    const talk = tf.fleet.talk('elder_rowan', 'Tell me of the wolves.', {
      speaker: 'bo',
      signal: stop.signal,
      onText: (piece) => {
        heard.push(piece);
        if (heard.join('').includes('wolves')) stop.abort();
      },
    });
    await assert.rejects(talk, (err: unknown) => isThymosError(err) && err.code === 'CANCELLED');
    await eventually(() => (exchange?.closedEarly ? true : undefined), 20_000, 'the stand-in to see its request closed');
    const cut = await eventually(
      async () => (await turns('elder_rowan', 'bo')).find((t) => t.tags.includes('cut')),
      20_000,
      'the cut turn',
    );
    assert.match(cut.content, /^I told bo: Listen well: the wolves/);
    assert.ok(!cut.content.includes('sheep know it first'), cut.content);
    assert.ok((await turns('elder_rowan', 'bo')).some((t) => t.content === 'bo said to me: Tell me of the wolves.'));
  });

  test("a client whose connection closes mid-reply cancels it: the model's request stops, and the words said so far stay, cut", async () => {
    let exchange: ChatExchange | undefined;
    standIn.answer = async (_chat, res, ex) => {
      exchange = ex;
      await streamPieces(res, dialoguePieces('Hear me: the river rises each spring, and the mill floods when the snow melts early.', 4), {
        delayMs: 60,
        exchange: ex,
      });
    };
    // A stock MCP client that goes away without a cancel: its HTTP connection closes, nothing more.
    const { url } = await tf.fleet.agentUrl('elder_rowan');
    const token = readAgentToken(loadConfig(tf.ws.configPath).dataPath, 'elder_rowan');
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
    });
    const client = new Client({ name: 'walks-away', version: '1.0.0' });
    await client.connect(transport);
    const heard: string[] = [];
    const gone = new Promise<void>((resolve) => {
      void client
        .callTool({ name: 'talk_to_elder_rowan', arguments: { message: 'Tell me of the river.', speaker: 'di' } }, undefined, {
          onprogress: (p) => {
            heard.push(p.message ?? '');
            if (heard.join('').includes('river')) void transport.close().then(resolve);
          },
        })
        .catch(() => resolve());
    });
    await gone;
    await eventually(() => (exchange?.closedEarly ? true : undefined), 20_000, 'the stand-in to see its request closed');
    const cut = await eventually(
      async () => (await turns('elder_rowan', 'di')).find((t) => t.tags.includes('cut')),
      20_000,
      'the cut turn',
    );
    assert.match(cut.content, /^I told di: Hear me: the river/);
    assert.ok(!cut.content.includes('snow melts early'), cut.content);
  });

  test('a stream that breaks off, or sends an error, ends coded after the words already passed on', async () => {
    for (const [how, options] of [
      ['breaks off', { breakAfter: 6, delayMs: 10 }],
      ['sends an error', { errorAfter: 6, delayMs: 10 }],
    ] as const) {
      standIn.answer = (_chat, res, exchange) =>
        streamPieces(res, dialoguePieces('One, two, three, four, five, six, seven.', 4), { ...options, exchange });
      const heard: string[] = [];
      const speaker = how === 'breaks off' ? 'cy' : 'cz';
      await assert.rejects(tf.fleet.talk('elder_rowan', 'Count for me.', { speaker, onText: (p) => heard.push(p) }), (err: unknown) => {
        assert.ok(isThymosError(err) && err.code === 'LLM_UNAVAILABLE', String(err));
        assert.match(
          err.message,
          how === 'breaks off' ? /broke off \(.+\) after \d+ characters/ : /sent an error \(the stand-in ran out of memory\)/,
        );
        return true;
      });
      assert.ok(heard.join('').includes('\nOne, t'), `${how}: ${JSON.stringify(heard)}`);
      const cut = (await turns('elder_rowan', speaker)).find((t) => t.tags.includes('cut'));
      assert.ok(cut && cut.content.startsWith('I told'), `${how}: ${JSON.stringify(await turns('elder_rowan', speaker))}`);
    }
  });

  test('a streamed reply whose model calls a tool: the call runs once, the fact is learned once, as when not streamed', async () => {
    const quest = (id: string) => ({
      id,
      title: 'Drive the wolves off',
      location: 'north_pasture',
      reward: 50,
      reason: 'the player warned of wolves',
    });
    const answerWith = (id: string) => (chat: ChatRequest, res: Parameters<ChatStandIn['answer']>[1]) => {
      const asks = chat.tools && !chat.messages.some((m) => m.role === 'tool') && chat.tool_choice === 'auto';
      const message = { message: 'I have posted a quest for it.', emotional_tone: 'stern', learned: [`the wolves are back, ${id}`] };
      const call = [
        { index: 0, id: `call_${id}`, type: 'function', function: { name: 'post_quest', arguments: JSON.stringify(quest(id)) } },
      ];
      if (chat.stream)
        return streamPieces(res, asks ? [] : dialoguePieces(message.message, 5, { emotional_tone: 'stern', learned: message.learned }), {
          delayMs: 5,
          ...(asks ? { toolCalls: call } : {}),
        });
      return completion(res, asks ? '' : JSON.stringify(message), asks ? { tool_calls: call } : {});
    };
    await running('captain_lysa');
    const before = await memoryCount('captain_lysa');
    standIn.answer = answerWith('wolves_streamed');
    const pieces: string[] = [];
    const streamed = await tf.fleet.talk('captain_lysa', 'Wolves in the north pasture!', { speaker: 'dee', onText: (p) => pieces.push(p) });
    assert.deepEqual(
      streamed.tool_calls?.map((c) => [c.tool, c.status]),
      [['post_quest', 'ok']],
    );
    assert.equal(pieces.join(''), streamed.text);
    assert.equal((await tf.fleet.world.get('quest', 'wolves_streamed'))?.giver, 'captain_lysa');
    const afterStreamed = await memoryCount('captain_lysa');

    standIn.answer = answerWith('wolves_whole');
    const whole = await tf.fleet.talk('captain_lysa', 'Wolves in the north pasture!', { speaker: 'eve' });
    assert.deepEqual(
      whole.tool_calls?.map((c) => [c.tool, c.status]),
      [['post_quest', 'ok']],
    );
    assert.equal(
      (await memoryCount('captain_lysa')) - afterStreamed,
      afterStreamed - before,
      'a streamed talk stores what a whole one does',
    );
    assert.deepEqual(streamed.learned, ['the wolves are back, wolves_streamed']);
    const calls = standIn.exchanges.filter((e) => e.request.messages.some((m) => m.role === 'tool'));
    assert.equal(calls.length, 2, 'each talk ran its tool loop once');
  });

  test('a listening agent refuses a streamed talk with its code, and sends nothing', async () => {
    await tf.fleet.start('elder_rowan', { mode: 'passive' });
    const pieces: string[] = [];
    await assert.rejects(
      tf.fleet.talk('elder_rowan', 'Hello?', { onText: (p) => pieces.push(p) }),
      (err: unknown) => isThymosError(err) && err.code === 'AGENT_NOT_ACTIVE',
    );
    assert.deepEqual(pieces, []);
  });
});
