import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

import { killAllAgents, startAgent } from '../test/helpers/agent-child.js';
import { ChatStandIn, completion } from '../test/helpers/chat-stand-in.js';
import { startNatsServer } from '../test/helpers/nats-server.js';
import { freePort } from '../test/helpers/ports.js';
import { createWorkspace } from '../test/helpers/workspace.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const TALKS = 30;
/** A local model writing about 50 tokens a second. */
const TOKEN_MS = 20;
const REPLY =
  'The miller tends the wheel, as his father did, and his father before him. Ask him of the flood year and he will tell you the wheel turned through it all, though the water stood a foot deep in the grinding room and the stones sang like bells.';

/**
 * Writes a dialogue answer as a model does, a token at a time: the JSON's opening, then the reply
 * a word at a time, then the rest. Says when it wrote the first word of the reply.
 */
async function writeLikeAModel(res: ServerResponse, firstWordAt: (t: number) => void): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (content: string) =>
    res.write(`data: ${JSON.stringify({ model: 'stand-in-1', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`);
  const words = REPLY.match(/\S+\s*/g)!;
  event('{"message": "');
  for (const [i, word] of words.entries()) {
    await sleep(TOKEN_MS);
    if (res.destroyed) return;
    event(word);
    if (i === 0) firstWordAt(performance.now());
  }
  event('", "emotional_tone": "calm", "learned": []}');
  res.end(
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 200, completion_tokens: words.length + 12 } })}\n\ndata: [DONE]\n\n`,
  );
}

/**
 * Time to the first words of a reply, streamed and not: one agent whose `[llm.dialogue]` is a
 * stand-in model on loopback that writes a token every 20 ms. The figure that counts is the delay
 * from the stand-in writing the reply's first word to the MCP client (the SDK's, with
 * `onprogress`) having it; beside it, what a player waits for the first words from asking, and
 * for the whole reply when it does not stream.
 */
export const talkStreamScenario: Scenario = {
  name: 'talk-stream',
  title: 'Replies that stream: time to the first words',
  async run() {
    const nats = await startNatsServer();
    const standIn = await ChatStandIn.start();
    const ws = createWorkspace({
      natsUrl: nats.url,
      extra: [
        '[llm.dialogue]',
        'provider = "openai-compatible"',
        `base_url = "${standIn.baseUrl}"`,
        'model = "stand-in-1"',
        'timeout_ms = 30000',
      ].join('\n'),
    });
    let firstWord = 0;
    standIn.answer = (chat, res) => {
      if (chat.stream) return writeLikeAModel(res, (t) => (firstWord = t));
      // Not streamed: the model takes as long to write it all, then it is sent whole.
      return sleep(TOKEN_MS * (REPLY.match(/\S+\s*/g)!.length + 1)).then(() =>
        completion(res, JSON.stringify({ message: REPLY, emotional_tone: 'calm' })),
      );
    };
    try {
      const agent = await startAgent({ id: 'elder_rowan', port: await freePort(), config: ws.configPath });
      const client = await agent.client();
      const talk = async (stream: boolean, speaker = 'bench') => {
        const asked = performance.now();
        firstWord = 0;
        let first = 0;
        let word = 0;
        let pieces = 0;
        await client.callTool({ name: 'talk_to_elder_rowan', arguments: { message: 'Who tends the mill?', speaker } }, undefined, {
          timeout: 60_000,
          ...(stream
            ? {
                onprogress: () => {
                  pieces++;
                  const now = performance.now();
                  if (first === 0) first = now;
                  // The first piece after the stand-in wrote the reply's first word (a greeting goes before it).
                  if (word === 0 && firstWord !== 0) word = now;
                },
              }
            : {}),
        });
        const done = performance.now();
        return { behind: word - firstWord, fromAsking: first - asked, whole: done - asked, pieces };
      };
      // The agent's first talk ever loads what dialogue needs: left out. Then a speaker's first talk,
      // which greets (the greeting goes out before recall): measured on its own.
      await talk(false, 'warm-up');
      const openings = [];
      for (let i = 0; i < 10; i++) openings.push(await talk(true, `newcomer-${i}`));
      await talk(true);
      const plain: number[] = [];
      for (let i = 0; i < 10; i++) {
        const asked = performance.now();
        await client.callTool({ name: 'get_elder_rowan_state', arguments: {} });
        plain.push(performance.now() - asked);
      }
      const streamed = [];
      const whole = [];
      for (let i = 0; i < TALKS; i++) {
        streamed.push(await talk(true));
        whole.push(await talk(false));
      }
      const q = (xs: number[]) => `${round(quantile(xs, 0.5), 1)} / ${round(quantile(xs, 0.95), 1)}`;
      const figures: Figure[] = [
        {
          metric: 'first words: the stand-in writes the first word → the MCP client has it, p50 / p95',
          value: q(streamed.map((s) => s.behind)),
          unit: 'ms',
          goal: '≤ 50 ms',
        },
        { metric: 'first words from asking, streamed, p50 / p95', value: q(streamed.map((s) => s.fromAsking)), unit: 'ms' },
        {
          metric: 'the whole reply from asking, streamed / not streamed, p50',
          value: `${round(
            quantile(
              streamed.map((s) => s.whole),
              0.5,
            ),
            0,
          )} / ${round(
            quantile(
              whole.map((s) => s.whole),
              0.5,
            ),
            0,
          )}`,
          unit: 'ms',
        },
        {
          metric: 'for scale: a tool call that only reads (get_elder_rowan_state), from asking, p50',
          value: String(round(quantile(plain, 0.5), 1)),
          unit: 'ms',
        },
        {
          metric: 'pieces per reply (one per word the model wrote)',
          value: String(
            quantile(
              streamed.map((s) => s.pieces),
              0.5,
            ),
          ),
          unit: '',
        },
        {
          metric: "a speaker's first talk: its greeting from asking / the first words behind the stand-in, p50 of 10",
          value: `${round(
            quantile(
              openings.map((o) => o.fromAsking),
              0.5,
            ),
            1,
          )} / ${round(
            quantile(
              openings.map((o) => o.behind),
              0.5,
            ),
            1,
          )}`,
          unit: 'ms',
        },
      ];
      await client.close();
      await agent.stop();
      return {
        figures,
        notes: [
          `${TALKS} talks streamed and ${TALKS} not, taken in turn, to one agent over MCP (the SDK client, onprogress), with a stand-in chat-completions server on 127.0.0.1 writing one token every ${TOKEN_MS} ms (${REPLY.match(/\S+\s*/g)!.length} words); not streamed, it answers after the same time.`,
          `The first figure is the cost of streaming through Thymos: from the stand-in writing the reply's first word to the client having it (the agent reads it out of the JSON and sends an MCP progress notification). Before its model is asked, the agent recalls, builds the context packet and writes the prompt: that is in "from asking". A speaker's first talk sends the persona's greeting before all that; it still comes some 20 ms after a plain call would answer, the cost of the first event on an MCP response stream (the agent sends it about 1 ms after the call arrives).`,
        ],
      };
    } finally {
      await killAllAgents();
      await standIn.stop();
      await nats.stop();
      ws.dispose();
    }
  },
};
