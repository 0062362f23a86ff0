import { LLM_USE_SCHEMAS, LLM_USES, type LlmContextSettings, type LlmUse, type LlmUseSettings } from '../../shared/config/index.js';
import type { AgentDefinition, LlmOverride } from '../../shared/domain/index.js';
import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { type LlmProvider, type TokenUsage } from './llm-provider.js';
import { createLlmProvider } from './llm-providers.js';
import { McpSamplingProvider, type Sample } from './mcp-sampling-provider.js';
import { OfflineProvider } from './offline-provider.js';

/** The MCP client a call came from, when it can answer sampling requests. */
export interface SamplingClient {
  name: string;
  sample: Sample;
  /** Whether it declared `sampling.tools` (its model may call the agent's tools). */
  tools?: boolean;
}

/**
 * The models one agent uses: `[llm.<use>]` of thymos.toml with the agent's own `llm`
 * overrides from the domain schema laid over it, checked again as a whole. Providers are
 * made once at start-up (a missing API key variable stops the agent there), except
 * `mcp-sampling`, which is the client of each call: without one that can sample, the use
 * answers offline.
 */
export class AgentModels {
  readonly #settings = new Map<LlmUse, LlmUseSettings>();
  readonly #providers = new Map<LlmUse, LlmProvider>();
  readonly #offline = new OfflineProvider();

  constructor(
    id: string,
    base: Readonly<Record<LlmUse, LlmUseSettings>>,
    definition: AgentDefinition,
    env: NodeJS.ProcessEnv,
    files: { config?: string | undefined; domain?: string | undefined } = {},
  ) {
    for (const use of LLM_USES) {
      const override = definition.llm?.[use];
      const settings = override ? overlay(id, use, base[use], override, files.domain) : base[use];
      this.#settings.set(use, settings);
      const provider = createLlmProvider(use, settings, env, override ? files.domain : files.config);
      if (provider) this.#providers.set(use, provider);
    }
  }

  settings(use: LlmUse): LlmUseSettings {
    return this.#settings.get(use)!;
  }

  /** How much of what the agent remembers a use's prompt may carry (its schema gives both a default). */
  contextBudget(use: 'dialogue' | 'reasoning'): LlmContextSettings {
    const { context_tokens, context_min_relevance } = this.settings(use);
    return { context_tokens: context_tokens!, context_min_relevance: context_min_relevance! };
  }

  /** Whether a use runs on something other than the offline composer (sampling counts: a client may have a model). */
  usesModel(use: LlmUse): boolean {
    return this.settings(use).provider !== 'offline';
  }

  /** The provider of a use for one call; `client` is the MCP client the call came from, if it can sample. */
  provider(use: LlmUse, client?: SamplingClient): LlmProvider {
    const settings = this.settings(use);
    if (settings.provider === 'mcp-sampling') {
      if (!client) return this.#offline;
      return new McpSamplingProvider(client.sample, {
        client: client.name,
        model: settings.model,
        temperature: settings.temperature,
        maxTokens: settings.max_tokens,
        timeoutMs: settings.timeout_ms,
        tools: client.tools ?? false,
      });
    }
    return this.#providers.get(use) ?? this.#offline;
  }

  /** What tokens of a use cost, by its `input_cost_per_1k` and `output_cost_per_1k`. */
  cost(use: LlmUse, usage: TokenUsage): number {
    const s = this.settings(use);
    return (usage.input_tokens * s.input_cost_per_1k + usage.output_tokens * s.output_cost_per_1k) / 1000;
  }
}

function overlay(id: string, use: LlmUse, base: LlmUseSettings, o: LlmOverride, file: string | undefined): LlmUseSettings {
  const raw: Record<string, unknown> = { ...base };
  if (o.provider != null) raw.provider = o.provider;
  if (o.baseUrl != null) raw.base_url = o.baseUrl;
  if (o.model != null) raw.model = o.model;
  if (o.apiKeyEnv != null) raw.api_key_env = o.apiKeyEnv;
  if (o.temperature != null) raw.temperature = o.temperature;
  if (o.maxTokens != null) raw.max_tokens = o.maxTokens;
  const parsed = LLM_USE_SCHEMAS[use].safeParse(raw);
  if (!parsed.success) {
    const path = `agents.${id}.llm.${use}`;
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `${path}: with [llm.${use}] of thymos.toml under it, ${describeIssues(parsed.error, raw)}`,
      { location: { file, path } },
    );
  }
  return parsed.data;
}
