/**
 * Thymos as a library. A game loop uses `upFleet`/`downFleet` and `connect` (the fleet
 * API); the agent side is exported for applications that embed or extend agents.
 */
export { connect, type ConnectOptions, type Fleet, type OperationOptions } from './client/index.js';
export { downFleet, upFleet, type DownResult, type LaunchOptions, type RelevanceModule, type RelevanceModuleInput, type UpResult } from './supervisor/index.js';
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
  ReconcileContextSchema,
  ReconcileReportSchema,
  FleetStatusSchema,
  type AgentStatusRow,
  type FleetStatus,
  type ProgressMessage,
  type ReconcileContext,
  type ReconcileContextInput,
  type ReconcileReport,
  type RelevanceInput,
} from './shared/index.js';
