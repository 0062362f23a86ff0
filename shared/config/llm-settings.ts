import { z } from 'zod';

import { ms } from './setting-types.js';

/** Where a use's text comes from. */
export const LLM_PROVIDERS = ['offline', 'openai-compatible', 'mcp-sampling'] as const;
/** What models are used for; each has its own `[llm.<use>]` settings. */
export const LLM_USES = ['dialogue', 'reasoning', 'extraction', 'consolidation'] as const;
export type LlmUse = (typeof LLM_USES)[number];

/** The model of one use (dialogue, reasoning, extraction, consolidation). */
export const LlmUseSettingsSchema = z
  .object({
    /**
     * `offline` (no model: answers composed from persona, speech style and memories),
     * `openai-compatible` (an HTTP endpoint), or `mcp-sampling` (the model of the MCP client
     * that is talking to the agent, when it can sample; offline otherwise). @default "offline"
     */
    provider: z.enum(LLM_PROVIDERS).default('offline'),
    /** The chat-completions base URL, e.g. "http://127.0.0.1:11434/v1" (Ollama). */
    base_url: z.string().regex(/^https?:\/\/\S+$/, 'expected an http:// or https:// URL').optional(),
    /** The model name the endpoint knows, e.g. "llama3.2". */
    model: z.string().min(1).optional(),
    /** Name of the environment variable holding the API key (the key itself never goes in this file). */
    api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name').optional(),
    temperature: z.number().min(0).max(2).default(0.7),
    max_tokens: z.number().int().min(1).max(1_000_000).default(512),
    /** A call, all retries included, is abandoned after this long. @default 30000 */
    timeout_ms: ms(100, 600_000, 30_000),
    /** Retries on 429 and 5xx, with exponential backoff. @default 3 */
    max_retries: z.number().int().min(0).max(10).default(3),
    /** What 1,000 input tokens cost, in the unit you bill in (e.g. USD); adds up in the agent's `llm.cost`. @default 0 */
    input_cost_per_1k: z.number().min(0).max(1_000_000).default(0),
    /** What 1,000 output tokens cost. @default 0 */
    output_cost_per_1k: z.number().min(0).max(1_000_000).default(0),
  })
  .strict()
  .refine((u) => u.provider !== 'openai-compatible' || u.base_url !== undefined, { message: 'expected base_url for provider "openai-compatible"', path: ['base_url'] })
  .refine((u) => u.provider !== 'openai-compatible' || u.model !== undefined, { message: 'expected model for provider "openai-compatible"', path: ['model'] });
export type LlmUseSettings = z.infer<typeof LlmUseSettingsSchema>;

/** Which model each use runs. */
export const LlmSettingsSchema = z
  .object({
    dialogue: LlmUseSettingsSchema.prefault({}),
    reasoning: LlmUseSettingsSchema.prefault({}),
    extraction: LlmUseSettingsSchema.prefault({}),
    consolidation: LlmUseSettingsSchema.prefault({}),
  })
  .strict();
