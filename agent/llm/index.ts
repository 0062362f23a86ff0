/**
 * Models: the provider interface and its implementations (offline, OpenAI-compatible, MCP sampling), structured output, a model's bounded tool loop, per-use settings, prompts and reasoning.
 */
export { AgentModels, type SamplingClient } from './agent-models.js';
export { StringControls } from './json-text.js';
export {
  type BriefMemory,
  type GenerateRequest,
  type GenerateResult,
  type LlmMessage,
  type LlmProvider,
  type ModelTool,
  type ModelToolCall,
  type PromptBrief,
  type ScoredOption,
  type TokenUsage,
  type ToolStep,
} from './llm-provider.js';
export { LlmSpending } from './llm-spending.js';
export { ANSWER_SHAPES, type DialogueReply, DialogueReplySchema, SummarySchema } from './llm-tasks.js';
export { OfflineProvider, statements } from './offline-provider.js';
export { OpenAiCompatibleProvider } from './openai-compatible-provider.js';
export { goalsLine, personaPrompt } from './persona-prompt.js';
export { generateStructured } from './structured-output.js';
export { runToolLoop, type ToolLoop } from './tool-loop.js';
