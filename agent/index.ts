export { type AgentStartContext, AgentStartContextSchema } from '../shared/protocol/index.js';
export { type GenerateRequest, type GenerateResult, type LlmProvider, type PromptBrief, type TokenUsage } from './llm/llm-provider.js';
export { type DialogueReply, DialogueReplySchema } from './llm/llm-tasks.js';
export { OfflineProvider } from './llm/offline-provider.js';
export { OpenAiCompatibleProvider } from './llm/openai-compatible-provider.js';
export { generateStructured } from './llm/structured-output.js';
export { agentResourceUris, THYMOS_VERSION } from './mcp/agent-mcp-server.js';
export { AgentMemory, type NewMemory, type RecallOptions } from './memory/agent-memory.js';
export { Bm25Index } from './memory/bm25-index.js';
export type { MemoryRecord, MemorySource, RecallHit } from './memory/memory-record.js';
export { MemoryStore } from './memory/memory-store.js';
export { memoryStrength } from './memory/memory-strength.js';
export { agentDataDir } from './process/agent-data.js';
export { AGENT_USAGE, type AgentOptions, AgentOptionsSchema, parseAgentArgs } from './process/agent-options.js';
export { resolveConfig, runAgentProcess, type RunningAgent } from './process/agent-process.js';
export { defaultDefinition } from './process/agent-setup.js';
export {
  type AgentBehavior,
  type AgentBehaviorContext,
  type CreateBehavior,
  type JobDelivery,
  type JobRequest,
  type JobResult,
  JobResultSchema,
  type TalkReply,
  type TalkRequest,
} from './runtime/agent-behavior.js';
export type { Decision, Thought } from './runtime/agent-reasoner.js';
export { AgentRuntime } from './runtime/agent-runtime.js';
export { DialogueBehavior } from './runtime/dialogue-behavior.js';
export type { ScriptContext, ScriptFunction } from './tools/script-context.js';
