/**
 * Thymos as a library. The agent side is exported for applications that embed or
 * extend agents (custom behaviours); the fleet API for game loops comes with the supervisor.
 */
export {
  AgentMemory,
  agentResourceUris,
  OfflineBehavior,
  runAgentProcess,
  type AgentBehavior,
  type AgentBehaviorContext,
  type CreateBehavior,
  type MemoryRecord,
  type RecallHit,
  type RunningAgent,
  type TalkReply,
  type TalkRequest,
} from './agent/index.js';
export {
  AgentControlReplySchema,
  AgentControlRequestSchema,
  AgentStateSchema,
  AgentStatusMessageSchema,
  configFromObject,
  DomainSchemaSchema,
  ErrorCode,
  isThymosError,
  loadConfig,
  loadDomainSchema,
  Subjects,
  ThymosConfigSchema,
  ThymosError,
  type AgentControlReply,
  type AgentControlRequest,
  type AgentDefinition,
  type AgentState,
  type DomainSchema,
  type ThymosConfig,
} from './shared/index.js';
