import {
  type CreateMessageRequest,
  type CreateMessageResult,
  type CreateMessageResultWithTools,
  ErrorCode as McpErrorCode,
  McpError,
  type SamplingMessage,
} from '@modelcontextprotocol/sdk/types.js';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import {
  defuseMarkers,
  type GenerateRequest,
  type GenerateResult,
  type LlmMessage,
  type LlmProvider,
  type ModelToolCall,
  type TokenUsage,
} from './llm-provider.js';

/** Sends one `sampling/createMessage` request to the MCP client, tied to the tool call being served. */
export type Sample = (
  params: CreateMessageRequest['params'],
  options: { signal: AbortSignal; timeout: number },
) => Promise<CreateMessageResult | CreateMessageResultWithTools>;

/**
 * The conversation as sampling carries it: the model's tool calls as `tool_use` blocks of its
 * turn, and their results as `tool_result` blocks of one user turn after it.
 */
function samplingMessages(messages: readonly LlmMessage[]): SamplingMessage[] {
  const out: SamplingMessage[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.role === 'tool') {
      const block = {
        type: 'tool_result' as const,
        toolUseId: m.tool_call_id,
        content: [{ type: 'text' as const, text: defuseMarkers(m.content) }],
      };
      const last = out.at(-1);
      if (last?.role === 'user' && Array.isArray(last.content) && last.content.every((c) => c.type === 'tool_result'))
        last.content.push(block);
      else out.push({ role: 'user', content: [block] });
      continue;
    }
    if (m.role === 'assistant' && m.tool_calls?.length) {
      const uses = m.tool_calls.map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: argumentsObject(c.arguments) }));
      out.push({
        role: 'assistant',
        content: [...(m.content ? [{ type: 'text' as const, text: defuseMarkers(m.content) }] : []), ...uses],
      });
      continue;
    }
    out.push({ role: m.role, content: { type: 'text', text: defuseMarkers(m.content) } });
  }
  return out;
}

/** A call's arguments as sampling's `tool_use` carries them: an object (arguments that were not one are sent as they were written, under `arguments`). */
function argumentsObject(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : { arguments: text };
  } catch {
    return { arguments: text };
  }
}

export interface McpSamplingOptions {
  /** Who is asked, for errors and provenance, e.g. the client's name. */
  client: string;
  /** Sent as a model hint; the client chooses. */
  model?: string | undefined;
  temperature: number;
  maxTokens: number;
  timeoutMs: number;
  /** Whether the client declared `sampling.tools`: then the model may call the agent's tools. */
  tools?: boolean;
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
  readonly capabilities: { streaming: boolean; json: boolean; tools: boolean };
  readonly #sample: Sample;
  readonly #o: McpSamplingOptions;
  #lastModel: string | undefined;

  constructor(sample: Sample, options: McpSamplingOptions) {
    this.#sample = sample;
    this.#o = options;
    this.capabilities = { streaming: false, json: false, tools: options.tools ?? false };
  }

  info(): { provider: string; model: string } {
    return { provider: this.kind, model: this.#lastModel ?? this.#o.model ?? this.#o.client };
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const o = this.#o;
    const system = request.messages.filter((m) => m.role === 'system').map((m) => defuseMarkers(m.content));
    const messages = samplingMessages(request.messages);
    const tools = this.capabilities.tools && request.tools?.length ? request.tools : undefined;
    const deadline = AbortSignal.timeout(o.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
    let result: CreateMessageResult | CreateMessageResultWithTools;
    try {
      result = await this.#sample(
        {
          messages,
          ...(system.length > 0 ? { systemPrompt: system.join('\n\n') } : {}),
          includeContext: 'none',
          temperature: request.temperature ?? o.temperature,
          maxTokens: request.maxTokens ?? o.maxTokens,
          ...(o.model ? { modelPreferences: { hints: [{ name: o.model }] } } : {}),
          ...(tools
            ? {
                tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters as { type: 'object' } })),
                toolChoice: { mode: request.toolChoice ?? 'auto' },
              }
            : {}),
        },
        { signal, timeout: o.timeoutMs },
      );
    } catch (err) {
      if (request.signal?.aborted)
        throw new ThymosError(ErrorCode.CANCELLED, `the sampling request to ${o.client} was cancelled`, { cause: err });
      if (deadline.aborted || (err instanceof McpError && err.code === McpErrorCode.RequestTimeout)) {
        throw new ThymosError(ErrorCode.TIMEOUT, `${o.client} did not answer the sampling request within ${o.timeoutMs} ms`, {
          cause: err,
        });
      }
      throw new ThymosError(ErrorCode.LLM_UNAVAILABLE, `${o.client} refused the sampling request: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const blocks = Array.isArray(result.content) ? result.content : [result.content];
    const text = blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
    const calls: ModelToolCall[] = blocks.flatMap((b) =>
      b.type === 'tool_use' ? [{ id: b.id, name: b.name, arguments: JSON.stringify(b.input) }] : [],
    );
    if (!blocks.some((b) => b.type === 'text') && calls.length === 0) {
      throw new ThymosError(
        ErrorCode.LLM_OUTPUT_INVALID,
        `${o.client} answered the sampling request with ${blocks.map((b) => b.type).join(', ') || 'no'} content; expected text${tools ? ' or tool_use' : ''}`,
      );
    }
    this.#lastModel = result.model;
    const prompt = request.messages.reduce((n, m) => n + m.content.length, 0);
    const usage: TokenUsage = {
      input_tokens: Math.ceil(prompt / 4),
      output_tokens: Math.ceil((text.length + calls.reduce((n, c) => n + c.arguments.length, 0)) / 4),
    };
    return {
      text,
      model: result.model,
      finish_reason: result.stopReason ?? 'stop',
      usage,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    };
  }

  /** MCP sampling answers whole (`streaming: false`): the text is passed on in one piece once it is in. */
  async stream(request: GenerateRequest, onText: (piece: string) => void): Promise<GenerateResult> {
    const result = await this.generate(request);
    onText(result.text);
    return result;
  }
}
