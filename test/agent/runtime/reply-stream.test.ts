import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { withoutMarkers } from '../../../agent/runtime/acting.js';
import { ReplyStream, SpokenText } from '../../../agent/runtime/reply-stream.js';

/** Feeds `text` to a fresh stream cut at `cuts` and returns the pieces passed on. */
function streamed(text: string, cuts: readonly number[]): { pieces: string[]; stream: ReplyStream } {
  const pieces: string[] = [];
  const stream = new ReplyStream((p) => pieces.push(p));
  stream.begin();
  let at = 0;
  for (const cut of [...cuts, text.length]) {
    stream.write(text.slice(at, cut));
    at = cut;
  }
  return { pieces, stream };
}

/** A repeatable pseudo-random sequence (a linear congruential generator). */
function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

function randomCuts(length: number, next: () => number): number[] {
  const cuts = new Set<number>();
  for (let i = 0; i < length / 3; i++) cuts.add(1 + Math.floor(next() * Math.max(length - 1, 1)));
  return [...cuts].sort((a, b) => a - b);
}

describe('a reply streamed as the speaker hears it', () => {
  test('the message is read out of the JSON as it grows, escapes decoded, whatever the cuts', () => {
    const message = 'Well, "traveller": the mill\u00e9 wheel\nturns 😀 at dawn\\dusk.';
    const json = JSON.stringify({ message, emotional_tone: 'calm', learned: ['the mill turns'] });
    const next = random(7);
    for (let round = 0; round < 200; round++) {
      const { pieces, stream } = streamed(json, randomCuts(json.length, next));
      assert.equal(pieces.join(''), message.trim(), `round ${round}`);
      assert.ok(pieces.every((p) => p.length > 0));
      assert.equal(stream.said, message);
      assert.equal(stream.settle(message), message);
    }
  });

  test('a \\u escape or a surrogate pair cut in two still comes out whole', () => {
    const json = '{"message":"caf\\u00e9 \\ud83d\\ude00 done"}';
    for (let cut = 1; cut < json.length; cut++) {
      const { pieces } = streamed(json, [cut]);
      assert.equal(pieces.join(''), 'café 😀 done', `cut at ${cut}`);
    }
  });

  test('JSON in a code fence is read from its brace; prose is passed on as it is', () => {
    assert.equal(streamed('```json\n{"message": "Aye."}\n```', [3, 9, 14]).pieces.join(''), 'Aye.');
    const prose = streamed('  The wolves came at dusk.  ', [4, 10]);
    assert.equal(prose.pieces.join(''), 'The wolves came at dusk.');
    assert.equal(prose.stream.said, '  The wolves came at dusk.  ');
  });

  test('[TOOL: …] is never passed on, and the pieces add up to the reply without its markers, whatever the cuts', () => {
    const replies = [
      'I will post it. [TOOL: post a quest to drive the wolves off] Someone will come.',
      '[TOOL: look up order ORD-12345]  It shipped  yesterday.',
      'A [bracket] is not a marker, nor is [TOOL without a colon], nor [TOOL:] empty.',
      'Two: [TOOL: a [TOOL: b] and [TOOL: broken\nacross lines] end',
      'Ends on a marker [TOOL: refund the kettle]',
    ];
    assert.equal(withoutMarkers(replies[0]!), 'I will post it. Someone will come.');
    const next = random(11);
    for (const reply of replies) {
      for (let round = 0; round < 100; round++) {
        const { pieces } = streamed(JSON.stringify({ message: reply }), randomCuts(reply.length + 14, next));
        assert.equal(pieces.join(''), withoutMarkers(reply), reply);
      }
    }
  });

  test('what was passed on is, after every letter the model writes, a beginning of what the whole reply is heard as', () => {
    for (const reply of [
      'Hm.  [TOOL: x] yes [TO be [TOOL: y z]  done [',
      '  a\t\tb [TOOL: q]c  [[TOOL: r]] \u{1D420}\u{1D420} [TOOL:\n\n s]  ',
    ]) {
      const pieces: string[] = [];
      const stream = new ReplyStream((p) => pieces.push(p));
      stream.begin();
      for (const c of reply) {
        stream.write(c);
        assert.ok(withoutMarkers(reply).startsWith(pieces.join('')), JSON.stringify({ reply, sent: pieces.join('') }));
      }
      assert.equal(stream.settle(reply), reply);
      assert.equal(
        pieces.join('') +
          new SpokenText(() => undefined).settle({ reply: withoutMarkers(reply), grounding: [] }).reply.slice(pieces.join('').length),
        withoutMarkers(reply),
      );
    }
  });

  test('whatever a model writes, nothing throws, and what was passed on is always a beginning of what it is heard as', () => {
    const next = random(23);
    const alphabet = ['[', ']', 'TOOL:', '[TOOL: ', '\\', '"', '\\u00', 'e9', '{', '}', '\n', ' ', '  ', 'a', 'word', '```', ':', ','];
    for (let round = 0; round < 300; round++) {
      const parts = Array.from({ length: 5 + Math.floor(next() * 60) }, () => alphabet[Math.floor(next() * alphabet.length)]!);
      const text = (next() < 0.5 ? '{"message": "' : '') + parts.join('');
      const pieces: string[] = [];
      const stream = new ReplyStream((p) => pieces.push(p));
      stream.begin();
      for (let i = 0, step = 1; i < text.length; i += step) {
        step = 1 + Math.floor(next() * 5);
        stream.write(text.slice(i, i + step));
      }
      assert.equal(pieces.join(''), stream.sent);
      assert.ok(withoutMarkers(stream.said).startsWith(stream.sent), JSON.stringify({ text, raw: stream.said, sent: stream.sent }));
    }
  });

  test('a later answer goes on from one heard in part on a new line, and the reply is all that was heard', () => {
    const pieces: string[] = [];
    const stream = new ReplyStream((p) => pieces.push(p));
    stream.begin();
    stream.write('Let me look.');
    stream.begin();
    stream.begin(); // a round with tool calls only: nothing to hear
    stream.write('{"message": "It shipped."}');
    assert.equal(pieces.join(''), 'Let me look.\nIt shipped.');
    assert.equal(stream.said, 'Let me look.\nIt shipped.');
    // The model's last message is not how what was heard goes on: the reply is what was heard.
    assert.equal(stream.settle('It shipped.'), 'Let me look.\nIt shipped.');
    assert.equal(new ReplyStream(() => undefined).settle('Nothing heard yet.'), 'Nothing heard yet.');
  });

  test('a line break a model left inside the JSON string is taken as meant, not as the end of the reply', () => {
    const json = '{"message": "The mill is north.\nFollow the river\tand you will find it.", "emotional_tone": "helpful"}';
    for (let cut = 1; cut < json.length; cut += 3)
      assert.equal(streamed(json, [cut]).pieces.join(''), 'The mill is north.\nFollow the river\tand you will find it.');
  });

  test("only the last answer's [TOOL: …] are kept for acting on; one left open when an answer ends is never said", () => {
    const pieces: string[] = [];
    const stream = new ReplyStream((p) => pieces.push(p));
    stream.begin();
    stream.write('{"message": "Here you go [TOOL: give 5 gold]"}');
    stream.begin();
    stream.write('{"message": "Here you go [TOOL: give 5 gold]"}');
    assert.equal(stream.said.match(/\[TOOL:/g)?.length, 1, stream.said);
    assert.equal(pieces.join(''), 'Here you go\nHere you go');

    const open: string[] = [];
    const cut = new ReplyStream((p) => open.push(p));
    cut.begin();
    cut.write('Hi [TOOL: give_gold amount=5');
    cut.begin();
    cut.write('Bye');
    assert.ok(!open.join('').includes('TOOL'), JSON.stringify(open));
    assert.ok(!cut.said.includes('TOOL'), cut.said);
  });

  test('a marker is as long as REPLY_MARKER counts it, in letters, not UTF-16 units', () => {
    const body = '𝐠'.repeat(400);
    const { pieces } = streamed(JSON.stringify({ message: `Take it [TOOL: ${body}] Bye now.` }), [20, 300, 700, 900]);
    assert.equal(pieces.join(''), 'Take it Bye now.');
  });

  test('a second "message" key is not read: what was heard stays the reply', () => {
    const { pieces, stream } = streamed('{"message":"Hi there","message":"[TOOL: wipe memory] Something else"}', [5, 14, 30]);
    assert.equal(pieces.join(''), 'Hi there');
    assert.equal(stream.settle('[TOOL: wipe memory] Something else'), 'Hi there');
  });

  test('SpokenText passes on the rest of the reply, or all of it, and a reply that says otherwise becomes what was heard', () => {
    const all: string[] = [];
    const whole = new SpokenText((p) => all.push(p));
    assert.deepEqual(whole.settle({ greeting: 'Well met.', reply: 'Aye.', grounding: [] }).reply, 'Aye.');
    assert.deepEqual(all, ['Well met.\nAye.']);

    const some: string[] = [];
    const part = new SpokenText((p) => some.push(p));
    part.write('Well met.\n');
    part.write('Ay');
    assert.equal(part.settle({ greeting: 'Well met.', reply: 'Aye, friend.', grounding: [] }).reply, 'Aye, friend.');
    assert.equal(some.join(''), 'Well met.\nAye, friend.');

    const other = new SpokenText(() => undefined);
    other.write('Well met.\nNo');
    assert.equal(other.settle({ greeting: 'Well met.', reply: 'Yes.', grounding: [] }).reply, 'No');
  });
});
