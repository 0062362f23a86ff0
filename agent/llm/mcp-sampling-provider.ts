import { type CreateMessageRequest, type CreateMessageResult, ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import type { GenerateRequest, GenerateResult, LlmProvider, TokenUsage } from './llm-provider.js';

/** Sends one `sampling/createMessage` request to the MCP client, tied to the tool call being served. */
export type Sample = (params: CreateMessageRequest['params'], options: { signal: AbortSignal; timeout: number }) => Promise<CreateMessageResult>;

export interface McpSamplingOptions {
  /** Who is asked, for errors and provenance, e.g. the client's name. */
  client: string;
  /** Sent as a model hint; the client chooses. */
  model?: string | undefined;
  temperature: number;
  maxTokens: number;
  timeoutMs: number;
}

/**
 * The model of the MCP client that is talking to the agent, asked through the protocol's
 * sampling request. The client picks the model (the configured one is a hint) and may ask
 * its user first. Sampling has no JSON mode, so structured answers rely on the prompt and
 * on the repair of `generateStructured`; it reports no token counts, so they are estimated at
 * four characters a token.
 */
export class McpSamplingProvider implements LlmProvider {
  readonly kind = 'mcp-sampling';
  readonly capabilities = { streaming: false, json: false, tools: false };
  readonly #sample: Sample;
  readonly #o: McpSamplingOptions;
  #lastModel: string | undefined;

  constructor(sample: Sample, options: McpSamplingOptions) {
    this.#sample = sample;
    this.#o = options;
  }

  info(): { provider: string; model: string } {
    return { provider: this.kind, model: this.#lastModel ?? this.#o.model ?? this.#o.client };
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const o = this.#o;
    const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content);
    const messages = request.messages
      .filter((m) => m.role !== 'system')
      .map((m) => ({ role: m.role as 'user' | 'assistant', content: { type: 'text' as const, text: m.content } }));
    const deadline = AbortSignal.timeout(o.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
    let result: CreateMessageResult;
    try {
      result = await this.#sample(
        {
          messages,
          ...(system.length > 0 ? { systemPrompt: system.join('\n\n') } : {}),
          includeContext: 'none',
          temperature: request.temperature ?? o.temperature,
          maxTokens: request.maxTokens ?? o.maxTokens,
          ...(o.model ? { modelPreferences: { hints: [{ name: o.model }] } } : {}),
        },
        { signal, timeout: o.timeoutMs },
      );
    } catch (err) {
      if (request.signal?.aborted) throw new ThymosError(ErrorCode.CANCELLED, `the sampling request to ${o.client} was cancelled`, { cause: err });
      if (deadline.aborted || (err instanceof McpError && err.code === McpErrorCode.RequestTimeout)) {
        throw new ThymosError(ErrorCode.TIMEOUT, `${o.client} did not answer the sampling request within ${o.timeoutMs} ms`, { cause: err });
      }
      throw new ThymosError(ErrorCode.LLM_UNAVAILABLE, `${o.client} refused the sampling request: ${(err as Error).message}`, { cause: err });
    }
    const content = result.content;
    if (content.type !== 'text') {
      throw new ThymosError(ErrorCode.LLM_OUTPUT_INVALID, `${o.client} answered the sampling request with ${content.type} content; expected text`);
    }
    this.#lastModel = result.model;
    const prompt = request.messages.reduce((n, m) => n + m.content.length, 0);
    const usage: TokenUsage = { input_tokens: Math.ceil(prompt / 4), output_tokens: Math.ceil(content.text.length / 4) };
    return { text: content.text, model: result.model, finish_reason: result.stopReason ?? 'stop', usage };
  }

  async stream(request: GenerateRequest, onText: (piece: string) => void): Promise<GenerateResult> {
    const result = await this.generate(request);
    onText(result.text);
    return result;
  }
}
