import { setTimeout as sleep } from 'node:timers/promises';

import pRetry, { AbortError } from 'p-retry';
import { z } from 'zod';

import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import {
  defuseMarkers,
  type GenerateRequest,
  type GenerateResult,
  type LlmMessage,
  type LlmProvider,
  type ModelToolCall,
  type TokenUsage,
} from './llm-provider.js';

export interface OpenAiCompatibleOptions {
  /** e.g. `http://127.0.0.1:11434/v1` (Ollama), `https://api.openai.com/v1`. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer …` when set. */
  apiKey?: string | undefined;
  temperature: number;
  maxTokens: number;
  /** A call (all its attempts) is abandoned after this long: TIMEOUT. */
  timeoutMs: number;
  /** Attempts after the first on 429 or 5xx; a refused connection or a network failure is not retried (LLM_UNAVAILABLE at once). */
  maxRetries: number;
  /** First backoff; doubles each retry, and a `Retry-After` header wins when shorter than the timeout. @default 500 */
  backoffMs?: number;
}

const UsageSchema = z
  .object({ prompt_tokens: z.number().nonnegative().optional(), completion_tokens: z.number().nonnegative().optional() })
  .nullish();

/**
 * A tool call as servers write it: arguments as JSON text (OpenAI), or already an object
 * (some local servers). A call without a name is kept, named "", for the loop to refuse.
 */
const ToolCallSchema = z.object({
  index: z.number().int().nonnegative().optional(),
  id: z.string().nullish(),
  function: z
    .object({ name: z.string().nullish(), arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish() })
    .nullish(),
});

/** A chat completion (`stream: false`). */
const CompletionSchema = z.object({
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), tool_calls: z.array(ToolCallSchema).nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1, 'expected at least one choice'),
  usage: UsageSchema,
});

/** One event of a streamed completion. */
const ChunkSchema = z.object({
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        delta: z.object({ content: z.string().nullish(), tool_calls: z.array(ToolCallSchema).nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: UsageSchema,
});

/** An error event in a stream (OpenAI, vLLM and llama.cpp send `{"error": {...}}` when a generation fails midway). */
const StreamErrorSchema = z.object({
  error: z.union([z.object({ message: z.string().optional() }).passthrough(), z.string().transform((message) => ({ message }))]),
});

type WireToolCall = z.infer<typeof ToolCallSchema>;

function argumentsText(a: NonNullable<WireToolCall['function']>['arguments']): string {
  return a == null ? '' : typeof a === 'string' ? a : JSON.stringify(a);
}

/** A message as the chat-completions protocol carries it. */
function wireMessage(m: LlmMessage): Record<string, unknown> {
  const content = defuseMarkers(m.content);
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.tool_call_id, content };
  if (m.role === 'assistant' && m.tool_calls?.length) {
    return {
      role: 'assistant',
      content: content || null,
      tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    };
  }
  return { role: m.role, content };
}

/**
 * Any server that speaks OpenAI's chat-completions protocol: Ollama, llama.cpp server, vLLM,
 * Groq, OpenAI. Streams by server-sent events, asks for JSON with `response_format`, retries
 * 429 and 5xx with exponential backoff, and gives up after `timeoutMs`. Aborting the request's
 * signal closes the HTTP request at once.
 */
export class OpenAiCompatibleProvider implements LlmProvider {
  readonly kind = 'openai-compatible';
  readonly capabilities = { streaming: true, json: true, tools: true };
  readonly #options: OpenAiCompatibleOptions;
  readonly #url: string;

  constructor(options: OpenAiCompatibleOptions) {
    this.#options = options;
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  }

  info(): { provider: string; model: string } {
    return { provider: this.kind, model: this.#options.model };
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    return this.#call(request, undefined);
  }

  async stream(request: GenerateRequest, onText: (piece: string) => void): Promise<GenerateResult> {
    return this.#call(request, onText);
  }

  async #call(request: GenerateRequest, onText: ((piece: string) => void) | undefined): Promise<GenerateResult> {
    const o = this.#options;
    const deadline = AbortSignal.timeout(o.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
    const body = {
      model: o.model,
      messages: request.messages.map(wireMessage),
      ...(request.tools?.length
        ? {
            tools: request.tools.map((t) => ({
              type: 'function',
              function: { name: t.name, description: t.description, parameters: t.parameters },
            })),
            tool_choice: request.toolChoice ?? 'auto',
          }
        : {}),
      temperature: request.temperature ?? o.temperature,
      max_tokens: request.maxTokens ?? o.maxTokens,
      ...(request.json ? { response_format: { type: 'json_object' } } : {}),
      ...(onText ? { stream: true, stream_options: { include_usage: true } } : {}),
    };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: onText ? 'text/event-stream' : 'application/json',
    };
    if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
    const backoff = o.backoffMs ?? 500;
    let attempt = 0;
    let retryAfterMs: number | undefined;
    try {
      // The wait between attempts is ours (onFailedAttempt, minTimeout 0): p-retry's back-off
      // cannot follow a Retry-After shorter than itself. No `signal` for p-retry: fetch and the
      // wait already end on it, and p-retry would also throw away an answer that arrived in full
      // as the signal fired.
      return await pRetry(
        async (n) => {
          attempt = n - 1;
          let response: Response;
          try {
            response = await fetch(this.#url, { method: 'POST', headers, body: JSON.stringify(body), signal });
            if (response.ok) return await this.#read(response, onText, signal);
          } catch (err) {
            throw new AbortError(this.#failure(err, request.signal, deadline, attempt));
          }
          const detail = (await response.text().catch(() => '')).slice(0, 300);
          const failure = new ThymosError(
            ErrorCode.LLM_UNAVAILABLE,
            `${this.#url} answered ${response.status}${attempt > 0 ? ` after ${attempt + 1} attempts` : ''}: ${detail}`,
          );
          if (response.status !== 429 && response.status < 500) throw new AbortError(failure);
          const after = Number(response.headers.get('retry-after'));
          retryAfterMs = Number.isFinite(after) && after > 0 ? Math.min(after * 1000, o.timeoutMs) : undefined;
          throw failure;
        },
        {
          retries: o.maxRetries,
          minTimeout: 0,
          onFailedAttempt: async ({ retriesLeft, retriesConsumed }) => {
            if (retriesLeft > 0) await sleep(retryAfterMs ?? backoff * 2 ** retriesConsumed, undefined, { signal });
          },
        },
      );
    } catch (err) {
      throw this.#failure(err, request.signal, deadline, attempt);
    }
  }

  /** What a thrown fetch or wait means: cancelled by the caller, timed out, or the server is unreachable. */
  #failure(err: unknown, caller: AbortSignal | undefined, deadline: AbortSignal, attempt: number): ThymosError {
    if (err instanceof ThymosError) return err;
    if (caller?.aborted) return new ThymosError(ErrorCode.CANCELLED, `the call to ${this.#url} was cancelled`, { cause: err });
    if (deadline.aborted)
      return new ThymosError(ErrorCode.TIMEOUT, `${this.#url} did not answer within ${this.#options.timeoutMs} ms`, { cause: err });
    const reason = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    return new ThymosError(
      ErrorCode.LLM_UNAVAILABLE,
      `cannot reach ${this.#url} (${reason})${attempt > 0 ? ` after ${attempt + 1} attempts` : ''}`,
      { cause: err },
    );
  }

  /** A stream when one was asked for and the server sends one; a server that ignores `stream` and answers whole is passed on whole. */
  async #read(response: Response, onText: ((piece: string) => void) | undefined, signal: AbortSignal): Promise<GenerateResult> {
    if (onText && /text\/event-stream/i.test(response.headers.get('content-type') ?? '')) return this.#readStream(response, onText, signal);
    const result = await this.#readJson(response);
    if (onText && result.text) onText(result.text);
    return result;
  }

  async #readJson(response: Response): Promise<GenerateResult> {
    const raw: unknown = await response.json().catch((err: unknown) => {
      throw new ThymosError(ErrorCode.LLM_UNAVAILABLE, `${this.#url} answered with a body that is not JSON: ${(err as Error).message}`, {
        cause: err,
      });
    });
    const data = CompletionSchema.safeParse(raw);
    if (!data.success)
      throw new ThymosError(
        ErrorCode.LLM_UNAVAILABLE,
        `${this.#url} answered something that is not a chat completion: ${describeIssues(data.error, raw)}`,
      );
    const choice = data.data.choices[0]!;
    const calls = (choice.message?.tool_calls ?? []).map((c, i) => modelCall(c, i));
    return {
      text: choice.message?.content ?? '',
      model: data.data.model ?? this.#options.model,
      finish_reason: choice.finish_reason ?? 'stop',
      usage: usageOf(data.data.usage),
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    };
  }

  /**
   * Server-sent events: `data: {chunk}` lines, then `data: [DONE]`; a tool call's pieces are joined
   * by their index. A stream that breaks off, sends an error event, or ends before the model said
   * it had finished ends LLM_UNAVAILABLE, saying how much text had come; the pieces passed on by
   * then stay passed on.
   */
  async #readStream(response: Response, onText: (piece: string) => void, signal: AbortSignal): Promise<GenerateResult> {
    if (!response.body) throw new ThymosError(ErrorCode.LLM_UNAVAILABLE, `${this.#url} answered a stream without a body`);
    const decoder = new TextDecoder();
    let buffered = '';
    let text = '';
    let model = this.#options.model;
    let finish = 'stop';
    let usage: TokenUsage | undefined;
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    const done = (): GenerateResult => {
      const asked = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
      return { text, model, finish_reason: finish, usage: usage ?? estimate(text), ...(asked.length > 0 ? { tool_calls: asked } : {}) };
    };
    const broke = (why: string) =>
      new ThymosError(ErrorCode.LLM_UNAVAILABLE, `the stream from ${this.#url} ${why} after ${text.length} characters of text`);
    const events = response.body[Symbol.asyncIterator]();
    let finished = false;
    try {
      for (;;) {
        let next: IteratorResult<unknown>;
        try {
          next = await events.next();
        } catch (err) {
          // A cancel or the timeout is told apart by the caller (#failure); anything else broke the stream.
          if (signal.aborted) throw err;
          throw broke(`broke off (${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message})`);
        }
        if (next.done) break;
        buffered += decoder.decode(next.value as Uint8Array, { stream: true });
        let from = 0;
        for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n', from)) {
          const line = buffered.slice(from, newline).trim();
          from = newline + 1;
          if (!line.startsWith('data:')) continue;
          const payload = line.slice(5).trim();
          if (payload === '[DONE]') return done();
          const chunk = this.#chunk(payload, broke);
          model = chunk.model ?? model;
          if (chunk.usage) usage = usageOf(chunk.usage);
          const choice = chunk.choices?.[0];
          if (choice?.finish_reason) [finish, finished] = [choice.finish_reason, true];
          for (const [i, c] of (choice?.delta?.tool_calls ?? []).entries()) {
            const at = c.index ?? i;
            const so = calls.get(at) ?? { id: '', name: '', arguments: '' };
            calls.set(at, {
              id: c.id || so.id || `call_${at}`,
              name: so.name + (c.function?.name ?? ''),
              arguments: so.arguments + argumentsText(c.function?.arguments),
            });
          }
          const piece = choice?.delta?.content;
          if (piece) {
            text += piece;
            onText(piece);
          }
        }
        buffered = buffered.slice(from);
      }
      // Ended without [DONE]: whole only if the model said it had finished.
      if (!finished) throw broke('ended before the model finished (no finish_reason, no [DONE])');
      return done();
    } finally {
      // The server may keep the stream open after [DONE] or an error: it is closed now, not at the deadline.
      await events.return?.().catch(() => undefined);
    }
  }

  #chunk(payload: string, broke: (why: string) => ThymosError): z.infer<typeof ChunkSchema> {
    let raw: unknown;
    try {
      raw = JSON.parse(payload);
    } catch {
      throw new ThymosError(ErrorCode.LLM_UNAVAILABLE, `${this.#url} sent a stream event that is not JSON: ${payload.slice(0, 100)}`);
    }
    const error = StreamErrorSchema.safeParse(raw);
    if (error.success) throw broke(`sent an error (${(error.data.error.message ?? JSON.stringify(error.data.error)).slice(0, 300)})`);
    const chunk = ChunkSchema.safeParse(raw);
    if (!chunk.success)
      throw new ThymosError(
        ErrorCode.LLM_UNAVAILABLE,
        `${this.#url} sent a stream event that is not a completion chunk: ${describeIssues(chunk.error, raw)}`,
      );
    return chunk.data;
  }
}

/** A call as the loop reads it: an id (made up when the server gave none), the name, the arguments as text. */
function modelCall(c: WireToolCall, i: number): ModelToolCall {
  return { id: c.id || `call_${i}`, name: c.function?.name ?? '', arguments: argumentsText(c.function?.arguments) };
}

function usageOf(u: z.infer<typeof UsageSchema>): TokenUsage {
  return { input_tokens: u?.prompt_tokens ?? 0, output_tokens: u?.completion_tokens ?? 0 };
}

/** When a server reports no usage: about four characters a token. */
function estimate(text: string): TokenUsage {
  return { input_tokens: 0, output_tokens: Math.ceil(text.length / 4) };
}
