import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { IntentResolver } from '../agent/intents/intent-resolver.js';
import { modelReader } from '../agent/intents/model-reader.js';
import type { GenerateRequest } from '../agent/llm/llm-provider.js';
import { OpenAiCompatibleProvider } from '../agent/llm/openai-compatible-provider.js';
import { runToolLoop } from '../agent/llm/tool-loop.js';
import { toolLoopOf } from '../agent/tools/model-tools.js';
import { offlineModelDir } from '../shared/config/thymos-root.js';
import type { Tools } from '../shared/domain/tool-schema.js';
import { StaticEmbedder } from '../shared/platform/static-embedder.js';
import { memoryToolCaller } from '../test/helpers/tool-caller.js';

/** How long the stand-in model takes to answer. */
const MODEL_MS = 20;

/** A stand-in chat-completions server on loopback that answers after `MODEL_MS` with what `answer` makes of the request. */
async function standIn(
  answer: (chat: { messages: Array<{ role: string; content: string | null }>; tools?: unknown[] }) => Record<string, unknown>,
): Promise<{ server: Server; provider: OpenAiCompatibleProvider }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const message = answer(JSON.parse(raw) as Parameters<typeof answer>[0]);
      setTimeout(
        () =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              model: 'stand-in',
              choices: [{ message, finish_reason: 'stop' }],
              usage: { prompt_tokens: 1, completion_tokens: 1 },
            }),
          ),
        MODEL_MS,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const provider = new OpenAiCompatibleProvider({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    model: 'stand-in',
    temperature: 0,
    maxTokens: 64,
    timeoutMs: 5000,
    maxRetries: 0,
  });
  return { server, provider };
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/**
 * What a model's tool loop adds above the model's own time: the stand-in asks for one read-only
 * Script call, then answers; the loop's time less two direct calls to the same server is the
 * loop's own (validation, record, the call, the second request's larger body).
 */
export async function toolLoopOverhead(rounds: number): Promise<{ loop: number[]; direct: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'thymos-bench-loop-'));
  writeFileSync(join(dir, 'tools.mjs'), 'export function look(input) { return { order: input.order_id, status: "shipped" }; }\n');
  const { server, provider } = await standIn((chat) =>
    chat.tools && !chat.messages.some((m) => m.role === 'tool')
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{"order_id":"ORD-12345"}' } }],
        }
      : { role: 'assistant', content: 'It shipped.' },
  );
  try {
    const { tools } = memoryToolCaller(
      {
        look: {
          description: 'Look up an order',
          input: { order_id: { pattern: 'ORD-[0-9]{5}' } },
          sideEffect: 'read_only',
          executor: { kind: 'script', path: 'tools.mjs', export: 'look' },
        },
      },
      dir,
    );
    const loop = toolLoopOf(tools, { caller: 'model:bench', maxSteps: 4, budgetMs: 10_000 })!;
    const messages = [{ role: 'user' as const, content: 'Has ORD-12345 shipped?' }];
    const out = { loop: [] as number[], direct: [] as number[] };
    for (let i = 0; i < rounds + 5; i++) {
      const a = performance.now();
      await runToolLoop(provider, { messages }, loop);
      const b = performance.now();
      await provider.generate({ messages });
      await provider.generate({ messages });
      const c = performance.now();
      if (i >= 5) {
        out.loop.push(b - a);
        out.direct.push(c - b);
      }
    }
    return out;
  } finally {
    await stop(server);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What reading plain words with an `[llm.extraction]` model adds above the model's own time: each
 * intent resolved with the stand-in answering the first tool offered, less the same request
 * (as the server received it) asked of the same server directly. What is left is the offline
 * ranking that finds the candidates, building the request, and validating the answer and its
 * arguments. The first five intents warm up.
 */
export async function readingOverhead(tools: Tools, intents: readonly string[], now: Date): Promise<{ read: number[]; added: number[] }> {
  let last: GenerateRequest | undefined;
  const { server, provider } = await standIn((chat) => {
    last = {
      messages: chat.messages.map((m) => ({ role: m.role as 'system' | 'user', content: m.content ?? '' })),
      json: true,
      temperature: 0,
    };
    const first = /^- (\w+) \(/m.exec(chat.messages[0]?.content ?? '')?.[1] ?? null;
    return { role: 'assistant', content: JSON.stringify({ tool: first, arguments: {} }) };
  });
  try {
    const embedder = StaticEmbedder.load(offlineModelDir(), { maxLength: 256 });
    const resolver = await IntentResolver.build(tools, {
      embedder,
      model: modelReader(
        tools,
        () => provider,
        () => undefined,
      ),
    });
    const out = { read: [] as number[], added: [] as number[] };
    for (const [i, intent] of intents.entries()) {
      last = undefined;
      const a = performance.now();
      await resolver.resolve(intent, undefined, now);
      const read = performance.now() - a;
      // An intent with no candidate asks nothing of the model.
      if (!last || i < 5) continue;
      const b = performance.now();
      await provider.generate(last);
      out.read.push(read);
      out.added.push(read - (performance.now() - b));
    }
    return out;
  } finally {
    await stop(server);
  }
}
