import { z } from 'zod';

import { ms } from './setting-types.js';

/** Where a use's text comes from. */
export const LLM_PROVIDERS = ['offline', 'openai-compatible', 'mcp-sampling'] as const;
/** What models are used for; each has its own `[llm.<use>]` settings. */
export const LLM_USES = ['dialogue', 'reasoning', 'extraction', 'consolidation'] as const;
export type LlmUse = (typeof LLM_USES)[number];

/** The settings of every use's model. */
const USE_FIELDS = {
  /**
   * `offline` (no model: answers composed from persona, speech style and memories),
   * `openai-compatible` (an HTTP endpoint), or `mcp-sampling` (the model of the MCP client
   * that is talking to the agent, when it can sample; offline otherwise). @default "offline"
   */
  provider: z.enum(LLM_PROVIDERS).default('offline'),
  /** The chat-completions base URL, e.g. "http://127.0.0.1:11434/v1" (Ollama). */
  base_url: z
    .string()
    .regex(/^https?:\/\/\S+$/, 'expected an http:// or https:// URL')
    .optional(),
  /** The model name the endpoint knows, e.g. "llama3.2". */
  model: z.string().min(1).optional(),
  /** Name of the environment variable holding the API key (the key itself never goes in this file). */
  api_key_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name')
    .optional(),
  /** Sampling temperature sent with every call. @default 0.7 */
  temperature: z.number().min(0).max(2).default(0.7),
  /** Most tokens of one answer. @default 512 */
  max_tokens: z.number().int().min(1).max(1_000_000).default(512),
  /** A call, all retries included, is abandoned after this long. @default 30000 */
  timeout_ms: ms(100, 600_000, 30_000),
  /** Retries on 429 and 5xx, with exponential backoff. @default 3 */
  max_retries: z.number().int().min(0).max(10).default(3),
  /** What 1,000 input tokens cost, in the unit you bill in (e.g. USD); adds up in the agent's `llm.cost`. @default 0 */
  input_cost_per_1k: z.number().min(0).max(1_000_000).default(0),
  /** What 1,000 output tokens cost. @default 0 */
  output_cost_per_1k: z.number().min(0).max(1_000_000).default(0),
};

/** What a use whose prompt carries what the agent remembers (dialogue, reasoning) adds: the budget of that context. */
const CONTEXT_FIELDS = {
  /**
   * Most tokens of remembered context put in front of the model (facts and insights, then
   * summaries, then raw turns, then open questions), counted as characters / 4 rounded up.
   * @default 1500
   */
  context_tokens: z.number().int().min(50).max(1_000_000).default(1500),
  /** Least relevance (a recall's final score, 0..1) a recalled memory needs to enter the context. @default 0.05 */
  context_min_relevance: z.number().min(0).max(1).default(0.05),
};

/** What a use whose model may call the agent's tools (dialogue, reasoning) adds: the loop's bounds. */
const TOOL_FIELDS = {
  /**
   * Most rounds of tool calls a model makes before it must answer (each round may ask for
   * several calls); 0: the model is offered no tools. Only providers that pass tools use it
   * (openai-compatible; mcp-sampling when the client samples with tools). @default 4
   */
  max_tool_steps: z.number().int().min(0).max(50).default(4),
  /**
   * From the start of a reply's tool loop: once spent, no further call is offered or run, a call
   * still running is cancelled, and the model answers with what it has. @default 20000
   */
  tool_budget_ms: ms(100, 600_000, 20_000),
};

/** A use's settings with its checks: an openai-compatible provider needs base_url and model. */
function useSchema<S extends z.ZodRawShape>(shape: S) {
  return z
    .object(shape)
    .strict()
    .refine((u: { provider?: unknown; base_url?: unknown }) => u.provider !== 'openai-compatible' || u.base_url !== undefined, {
      message: 'expected base_url for provider "openai-compatible"',
      path: ['base_url'],
    })
    .refine((u: { provider?: unknown; model?: unknown }) => u.provider !== 'openai-compatible' || u.model !== undefined, {
      message: 'expected model for provider "openai-compatible"',
      path: ['model'],
    });
}

/** The model of one use (extraction, consolidation). */
export const LlmUseSettingsSchema = useSchema(USE_FIELDS);
/** The model of a use that is given what the agent remembers (dialogue, reasoning), and that context's budget. */
export const LlmContextUseSettingsSchema = useSchema({ ...USE_FIELDS, ...CONTEXT_FIELDS, ...TOOL_FIELDS });
export type LlmContextSettings = Pick<z.infer<typeof LlmContextUseSettingsSchema>, 'context_tokens' | 'context_min_relevance'>;
export type LlmToolSettings = Pick<z.infer<typeof LlmContextUseSettingsSchema>, 'max_tool_steps' | 'tool_budget_ms'>;
export type LlmUseSettings = z.infer<typeof LlmUseSettingsSchema> & Partial<LlmContextSettings> & Partial<LlmToolSettings>;
/** The schema of each use's settings. */
export const LLM_USE_SCHEMAS = {
  dialogue: LlmContextUseSettingsSchema,
  reasoning: LlmContextUseSettingsSchema,
  extraction: LlmUseSettingsSchema,
  consolidation: LlmUseSettingsSchema,
} as const;

/** Which model each use runs. */
export const LlmSettingsSchema = z
  .object({
    dialogue: LlmContextUseSettingsSchema.prefault({}),
    reasoning: LlmContextUseSettingsSchema.prefault({}),
    extraction: LlmUseSettingsSchema.prefault({}),
    consolidation: LlmUseSettingsSchema.prefault({}),
  })
  .strict();
