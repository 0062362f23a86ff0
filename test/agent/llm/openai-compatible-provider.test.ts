import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { z } from 'zod';

import { type GenerateResult } from '../../../agent/llm/llm-provider.js';
import { type OpenAiCompatibleOptions, OpenAiCompatibleProvider } from '../../../agent/llm/openai-compatible-provider.js';
import { generateStructured } from '../../../agent/llm/structured-output.js';
import { ErrorCode } from '../../../shared/errors/errors.js';

/** What the stand-in server saw of one request. */
interface Seen {
  body: Record<string, unknown>;
  auth: string | undefined;
  /** Resolves when the client closed the connection before the server answered in full. */
  closedEarly: Promise<void>;
}

type Handler = (seen: Seen, res: ServerResponse) => void;

/** `p`, or a failure after `ms`: a request that is never closed fails the test instead of hanging it. */
function within(p: Promise<void>, ms = 3000): Promise<void> {
  return Promise.race([p, new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`not closed within ${ms} ms`)), ms).unref())]);
}

/**
 * A local HTTP server that speaks the chat-completions protocol, standing in for the paid
 * service: each request is answered by the next handler in the queue.
 */
function completion(content: string, usage = { prompt_tokens: 12, completion_tokens: 5 }) {
  return JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    model: 'stand-in-1',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage,
  });
}

describe('openai-compatible provider against a local chat-completions server', () => {
  const queue: Handler[] = [];
  const seen: Seen[] = [];
  let baseUrl = '';
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      let closed!: () => void;
      const closedEarly = new Promise<void>((resolve) => (closed = resolve));
      res.on('close', () => {
        if (!res.writableFinished) closed();
      });
      const s: Seen = { body: JSON.parse(raw) as Record<string, unknown>, auth: req.headers.authorization, closedEarly };
      seen.push(s);
      const handler = queue.shift();
      if (!handler) {
        res.writeHead(500).end('no handler queued');
        return;
      }
      handler(s, res);
    });
  });
  const provider = (o: Partial<OpenAiCompatibleOptions> = {}) =>
    new OpenAiCompatibleProvider({
      baseUrl,
      model: 'stand-in-1',
      temperature: 0.3,
      maxTokens: 64,
      timeoutMs: 2000,
      maxRetries: 2,
      backoffMs: 20,
      ...o,
    });
  const json =
    (body: string, status = 200, headers: Record<string, string> = {}): Handler =>
    (_s, res) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('generate sends model, messages, temperature, max tokens and the key, and returns text and usage', async () => {
    queue.push(json(completion('Well met.')));
    const result = await provider({ apiKey: 'sk-test' }).generate({ messages: [{ role: 'user', content: 'Hello' }], temperature: 0.9 });
    assert.deepEqual(result, {
      text: 'Well met.',
      model: 'stand-in-1',
      finish_reason: 'stop',
      usage: { input_tokens: 12, output_tokens: 5 },
    });
    const last = seen.at(-1)!;
    assert.deepEqual(last.body, { model: 'stand-in-1', messages: [{ role: 'user', content: 'Hello' }], temperature: 0.9, max_tokens: 64 });
    assert.equal(last.auth, 'Bearer sk-test');
  });

  test('stream delivers the pieces as they arrive, then the whole text and the usage', async () => {
    queue.push((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunks = ['Well', ' met', ', traveller.'].map((c) => ({
        model: 'stand-in-1',
        choices: [{ index: 0, delta: { content: c }, finish_reason: null }],
      }));
      for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.write(`data: ${JSON.stringify({ model: 'stand-in-1', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ model: 'stand-in-1', choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
    const pieces: string[] = [];
    const result = await provider().stream({ messages: [{ role: 'user', content: 'Hello' }] }, (p) => pieces.push(p));
    assert.deepEqual(pieces, ['Well', ' met', ', traveller.']);
    assert.equal(result.text, 'Well met, traveller.');
    assert.deepEqual(result.usage, { input_tokens: 7, output_tokens: 3 });
    assert.equal(seen.at(-1)!.body.stream, true);
  });

  test('structured output asks for JSON, and a reply that does not fit is repaired once with the reason', async () => {
    const Reply = z.object({ message: z.string(), emotional_tone: z.enum(['calm', 'angry']) });
    queue.push(
      json(completion('Sure! {"message": "Go north.", "emotional_tone": "sleepy"}')),
      json(completion('{"message": "Go north.", "emotional_tone": "calm"}')),
    );
    const { value, result } = await generateStructured(provider(), { messages: [{ role: 'user', content: 'Where?' }] }, Reply);
    assert.deepEqual(value, { message: 'Go north.', emotional_tone: 'calm' });
    assert.deepEqual(result.usage, { input_tokens: 24, output_tokens: 10 }, 'usage adds up over the attempts');
    const [first, second] = seen.slice(-2);
    assert.deepEqual(first!.body.response_format, { type: 'json_object' });
    const repair = (second!.body.messages as Array<{ role: string; content: string }>).at(-1)!;
    assert.equal(repair.role, 'user');
    assert.match(repair.content, /emotional_tone/);
    assert.match(repair.content, /"sleepy"/);

    queue.push(json(completion('no json here')), json(completion('{"message": 3}')));
    const spent: GenerateResult[] = [];
    await assert.rejects(
      generateStructured(provider(), { messages: [{ role: 'user', content: 'Where?' }] }, Reply, {
        spent: (r) => spent.push(r),
        prose: (text) => ({ message: text, emotional_tone: 'calm' as const }),
      }),
      (err: { code?: string; message: string }) => err.code === ErrorCode.LLM_OUTPUT_INVALID && /after 2 attempt/.test(err.message),
      'JSON that does not fit is not prose: it fails',
    );
    assert.deepEqual(
      spent.map((r) => [r.calls, r.prose, r.usage]),
      [[2, false, { input_tokens: 24, output_tokens: 10 }]],
      'a failed answer still counts both calls',
    );
  });

  test('prose after the repair is used as it is when the caller allows it, and counted as two calls and a prose answer', async () => {
    const Reply = z.object({ message: z.string() });
    queue.push(json(completion('Go north, friend.')), json(completion('North. Past the mill.')));
    const spent: GenerateResult[] = [];
    const { value, result } = await generateStructured(provider(), { messages: [{ role: 'user', content: 'Where?' }] }, Reply, {
      spent: (r) => spent.push(r),
      prose: (text) => ({ message: text }),
    });
    assert.deepEqual(value, { message: 'North. Past the mill.' });
    assert.deepEqual([result.calls, result.prose], [2, true]);
    assert.deepEqual(
      spent.map((r) => [r.calls, r.prose]),
      [[2, true]],
    );
  });

  test('429 and 5xx are retried with backoff; a 400 is not; retries give up with the status', async () => {
    queue.push(json('{"error":"slow down"}', 429, { 'retry-after': '0' }), json(completion('At last.')));
    assert.equal((await provider().generate({ messages: [{ role: 'user', content: 'Hi' }] })).text, 'At last.');

    const before = seen.length;
    queue.push(json('{"error":"down"}', 503), json('{"error":"down"}', 502), json('{"error":"down"}', 500));
    await assert.rejects(
      provider().generate({ messages: [{ role: 'user', content: 'Hi' }] }),
      (err: { code?: string; message: string }) =>
        err.code === ErrorCode.LLM_UNAVAILABLE && /answered 500 after 3 attempts/.test(err.message),
    );
    assert.equal(seen.length - before, 3, 'max_retries 2: three attempts in all');

    queue.push(json('{"error":"bad model"}', 400));
    await assert.rejects(
      provider().generate({ messages: [{ role: 'user', content: 'Hi' }] }),
      (err: { code?: string; message: string }) =>
        err.code === ErrorCode.LLM_UNAVAILABLE && /answered 400: \{"error":"bad model"\}/.test(err.message),
    );
  });

  test('a Retry-After shorter than the back-off is waited instead, and a 400 after a 503 is not retried', async () => {
    queue.push(json('{"error":"slow down"}', 503, { 'retry-after': '1' }), json(completion('After a second.')));
    // Waiting the back-off (60 s) would time the call out (5 s).
    assert.equal(
      (await provider({ backoffMs: 60_000, timeoutMs: 5000 }).generate({ messages: [{ role: 'user', content: 'Hi' }] })).text,
      'After a second.',
    );

    const before = seen.length;
    queue.push(json('{"error":"down"}', 503), json('{"error":"bad model"}', 400));
    await assert.rejects(
      provider().generate({ messages: [{ role: 'user', content: 'Hi' }] }),
      (err: { code?: string; message: string }) =>
        err.code === ErrorCode.LLM_UNAVAILABLE && /answered 400 after 2 attempts/.test(err.message),
    );
    assert.equal(seen.length - before, 2);
  });

  test('the wait between attempts ends with the call: cancelled by the caller, or timed out, and nothing more is sent', async () => {
    let before = seen.length;
    queue.push(json('{"error":"down"}', 503));
    const controller = new AbortController();
    const call = provider({ backoffMs: 60_000, timeoutMs: 120_000 }).generate({
      messages: [{ role: 'user', content: 'Hi' }],
      signal: controller.signal,
    });
    const deadline = Date.now() + 5000;
    while (seen.length === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort();
    await assert.rejects(call, (err: { code?: string }) => err.code === ErrorCode.CANCELLED);
    assert.equal(seen.length - before, 1);

    before = seen.length;
    queue.push(json('{"error":"down"}', 503));
    await assert.rejects(
      provider({ backoffMs: 60_000, timeoutMs: 300 }).generate({ messages: [{ role: 'user', content: 'Hi' }] }),
      (err: { code?: string }) => err.code === ErrorCode.TIMEOUT,
    );
    assert.equal(seen.length - before, 1);
  });

  test('a server that hangs times out, and the request is closed', async () => {
    queue.push(() => undefined);
    const started = Date.now();
    await assert.rejects(
      provider({ timeoutMs: 300 }).generate({ messages: [{ role: 'user', content: 'Hi' }] }),
      (err: { code?: string }) => err.code === ErrorCode.TIMEOUT,
    );
    assert.ok(Date.now() - started < 2000);
    await within(seen.at(-1)!.closedEarly);
  });

  test('aborting mid-stream cancels at once and closes the request, so spending stops', async () => {
    queue.push((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Once upon' } }] })}\n\n`);
    });
    const controller = new AbortController();
    const pieces: string[] = [];
    const call = provider({ timeoutMs: 10_000 }).stream(
      { messages: [{ role: 'user', content: 'A long story' }], signal: controller.signal },
      (p) => {
        pieces.push(p);
        controller.abort();
      },
    );
    await assert.rejects(call, (err: { code?: string }) => err.code === ErrorCode.CANCELLED);
    assert.deepEqual(pieces, ['Once upon']);
    await within(seen.at(-1)!.closedEarly);
  });

  test('a stream that breaks off or sends an error event ends LLM_UNAVAILABLE, after the pieces that came, and is not retried', async () => {
    const piece = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    queue.push((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(piece('Once upon'));
      setTimeout(() => res.destroy(), 50);
    });
    const before = seen.length;
    const pieces: string[] = [];
    await assert.rejects(
      provider().stream({ messages: [{ role: 'user', content: 'A story' }] }, (p) => pieces.push(p)),
      (err: { code?: string; message: string }) =>
        err.code === ErrorCode.LLM_UNAVAILABLE && /broke off \(.+\) after 9 characters of text/.test(err.message),
    );
    assert.deepEqual(pieces, ['Once upon']);
    assert.equal(seen.length - before, 1, 'a stream that began is not asked again');
    queue.push((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${piece('Once')}data: ${JSON.stringify({ error: { message: 'out of memory', type: 'server_error' } })}\n\n`);
    });
    await assert.rejects(
      provider().stream({ messages: [{ role: 'user', content: 'A story' }] }, () => undefined),
      (err: { code?: string; message: string }) =>
        err.code === ErrorCode.LLM_UNAVAILABLE && /sent an error \(out of memory\) after 4 characters/.test(err.message),
    );
  });

  test('a server that ignores stream and answers whole is passed on whole, in one piece', async () => {
    queue.push(json(JSON.stringify({ model: 'stand-in-1', choices: [{ message: { content: 'All at once.' }, finish_reason: 'stop' }] })));
    const pieces: string[] = [];
    const result = await provider().stream({ messages: [{ role: 'user', content: 'Hi' }] }, (p) => pieces.push(p));
    assert.deepEqual(pieces, ['All at once.']);
    assert.equal(result.text, 'All at once.');
  });

  test('a stream that just ends, with no finish_reason and no [DONE], is not taken as the whole answer', async () => {
    queue.push((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Once upon a' } }] })}\n\n`);
    });
    await assert.rejects(
      provider().stream({ messages: [{ role: 'user', content: 'A story' }] }, () => undefined),
      (err: { code?: string; message: string }) =>
        err.code === ErrorCode.LLM_UNAVAILABLE && /ended before the model finished/.test(err.message),
    );
  });

  test('a server that keeps the stream open after [DONE] has it closed at once, not at the deadline', async () => {
    queue.push((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Done.' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
      );
    });
    const result = await provider({ timeoutMs: 60_000 }).stream({ messages: [{ role: 'user', content: 'Hi' }] }, () => undefined);
    assert.equal(result.text, 'Done.');
    await within(seen.at(-1)!.closedEarly);
  });

  test('an endpoint nobody listens on is LLM_UNAVAILABLE naming it', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(
      provider({ baseUrl: `http://127.0.0.1:${port}/v1`, maxRetries: 1 }).generate({ messages: [{ role: 'user', content: 'Hi' }] }),
      (err: { code?: string; message: string }) =>
        err.code === ErrorCode.LLM_UNAVAILABLE &&
        err.message.includes(`127.0.0.1:${port}/v1/chat/completions`) &&
        /ECONNREFUSED/.test(err.message),
    );
  });
});
