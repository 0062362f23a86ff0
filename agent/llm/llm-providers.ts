import { type LlmUseSettings } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { LlmProvider } from './llm-provider.js';
import { OpenAiCompatibleProvider } from './openai-compatible-provider.js';

/**
 * The HTTP provider `[llm.<use>]` configures, or undefined for `offline` and `mcp-sampling`
 * (no endpoint: the offline composer, or the MCP client of each call). The API key is read
 * from the environment variable the configuration names; a missing one is CONFIG_INVALID
 * naming it.
 */
export function createLlmProvider(
  use: string,
  settings: LlmUseSettings,
  env: NodeJS.ProcessEnv = process.env,
  file?: string,
): LlmProvider | undefined {
  if (settings.provider !== 'openai-compatible') return undefined;
  let apiKey: string | undefined;
  if (settings.api_key_env) {
    apiKey = env[settings.api_key_env];
    if (!apiKey) {
      throw new ThymosError(
        ErrorCode.CONFIG_INVALID,
        `llm.${use}.api_key_env: the environment variable ${settings.api_key_env} is not set in this agent's environment, which in a fleet is the supervisor's (the one \`thymos up\` ran in): export it, then run \`thymos down\` and \`thymos up\``,
        { location: { file, path: `llm.${use}.api_key_env` } },
      );
    }
  }
  return new OpenAiCompatibleProvider({
    baseUrl: settings.base_url!,
    model: settings.model!,
    apiKey,
    temperature: settings.temperature,
    maxTokens: settings.max_tokens,
    timeoutMs: settings.timeout_ms,
    maxRetries: settings.max_retries,
  });
}
