import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A chat-completions request as the stand-in reads it. */
export interface ChatRequest {
  model?: string;
  messages: Array<{ role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
  tool_choice?: string;
  stream?: boolean;
  response_format?: unknown;
}

/** How a request ended on the stand-in's side. */
export interface ChatExchange {
  request: ChatRequest;
  /** The client closed the connection before the answer was finished (a cancel, seen from here). */
  closedEarly: boolean;
  /** When the first piece of a streamed answer was written (performance.now()). */
  firstPieceAt?: number;
}

/**
 * A local OpenAI-compatible chat-completions server on 127.0.0.1, standing in for a model:
 * each request is answered by `answer`, which may write whole completions (`completion`) or
 * stream pieces slowly (`streamPieces`). Every exchange is kept, with whether its client went
 * away before the answer was done.
 */
export class ChatStandIn {
  readonly exchanges: ChatExchange[] = [];
  /** How the next requests are answered. */
  answer: (chat: ChatRequest, res: ServerResponse, exchange: ChatExchange) => void | Promise<void> = (_chat, res) =>
    void completion(res, 'stand-in');
  readonly #server: Server;

  private constructor() {
    this.#server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let raw = '';
      req.on('data', (d: Buffer) => (raw += d.toString()));
      req.on('end', () => {
        const exchange: ChatExchange = { request: JSON.parse(raw) as ChatRequest, closedEarly: false };
        this.exchanges.push(exchange);
        res.on('close', () => {
          if (!res.writableFinished) exchange.closedEarly = true;
        });
        void Promise.resolve(this.answer(exchange.request, res, exchange)).catch(() => res.destroy());
      });
    });
  }

  static async start(): Promise<ChatStandIn> {
    const standIn = new ChatStandIn();
    await new Promise<void>((resolve) => standIn.#server.listen(0, '127.0.0.1', resolve));
    return standIn;
  }

  /** The `base_url` to configure: `http://127.0.0.1:<port>/v1`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/** A whole chat completion (`stream: false`) whose message says `content`. */
export function completion(res: ServerResponse, content: string, extra: { tool_calls?: unknown[] } = {}): void {
  const message = { role: 'assistant', content, ...extra };
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      model: 'stand-in-1',
      choices: [{ index: 0, message, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 5 },
    }),
  );
}

/**
 * A streamed completion: one server-sent event per piece of content, `delayMs` apart, then
 * `[DONE]`. It stops writing when the client goes away. With `breakAfter`, the connection is
 * destroyed after that many pieces (a stream that fails midway); with `errorAfter`, an error
 * event is sent instead of the rest.
 */
export async function streamPieces(
  res: ServerResponse,
  pieces: readonly string[],
  options: { delayMs?: number; exchange?: ChatExchange; breakAfter?: number; errorAfter?: number; toolCalls?: unknown[] } = {},
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  for (const [i, piece] of pieces.entries()) {
    if (res.destroyed) return;
    if (i === options.breakAfter) return void res.destroy();
    if (i === options.errorAfter) {
      event({ error: { message: 'the stand-in ran out of memory', type: 'server_error' } });
      return void res.end();
    }
    event({ model: 'stand-in-1', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
    if (i === 0 && options.exchange) options.exchange.firstPieceAt = performance.now();
    if (options.delayMs) await sleep(options.delayMs);
  }
  if (res.destroyed) return;
  if (options.toolCalls)
    event({ model: 'stand-in-1', choices: [{ index: 0, delta: { tool_calls: options.toolCalls }, finish_reason: 'tool_calls' }] });
  event({
    model: 'stand-in-1',
    choices: [{ index: 0, delta: {}, finish_reason: options.toolCalls ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: pieces.length },
  });
  res.end('data: [DONE]\n\n');
}

/** `{"message": …}` as a dialogue model writes it, cut into pieces of about `size` characters. */
export function dialoguePieces(
  message: string,
  size = 6,
  rest: Record<string, unknown> = { emotional_tone: 'calm', learned: [] },
): string[] {
  const json = JSON.stringify({ message, ...rest });
  const out: string[] = [];
  for (let i = 0; i < json.length; i += size) out.push(json.slice(i, i + size));
  return out;
}
