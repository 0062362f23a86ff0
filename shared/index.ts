export {
  AgentControlReplySchema,
  AgentControlRequestSchema,
  AgentModeSchema,
  AgentStateSchema,
  AgentStatusMessageSchema,
  EventDecisionSchema,
  type EventDecision,
  type AgentControlReply,
  type AgentControlRequest,
  type AgentMode,
  type AgentState,
  type AgentStatusMessage,
  RelevanceInputSchema,
  type RelevanceInput,
} from './agent-protocol.js';
export {
  AgentDefinitionSchema,
  AgentIdSchema,
  DomainSchemaSchema,
  EMPTY_DOMAIN,
  LifecycleStateSchema,
  loadDomainSchema,
  parseDomainSchema,
  pklBinaryPath,
  type AgentDefinition,
  type AgentId,
  type Condition,
  type DomainSchema,
  type LifecycleState,
  type Persona,
  type RelevanceRule,
} from './domain-schema.js';
export { ErrorCode, isThymosError, ThymosError, toThymosError, type ErrorLocation, type WireError } from './errors.js';
export { createLogger, type Logger, type LoggerOptions } from './logger.js';
export { connectNats, type NatsConnection, type NatsConnectOptions } from './nats-connection.js';
export { Subjects } from './subjects.js';
export {
  configFromObject,
  loadConfig,
  parseConfig,
  ThymosConfigSchema,
  type ThymosConfig,
  type ThymosConfigInput,
  type ThymosSettings,
} from './thymos-config.js';
export { fleetPaths, Pm2Names, type FleetPaths } from './fleet-paths.js';
export { fleetNatsUrl, readFleetInfo, type FleetInfo } from './fleet-runtime.js';
export {
  AgentContextSchema,
  parseReconcileContext,
  parseReconcileContextText,
  ReconcileContextSchema,
  type AgentContext,
  type ReconcileContext,
  type ReconcileContextInput,
} from './reconcile-context.js';
export {
  AgentStatusRowSchema,
  FleetStatusSchema,
  ProgressMessageSchema,
  ReconcileReportSchema,
  SupervisorReplySchema,
  SupervisorRequestSchemas,
  TransitionRecordSchema,
  type AgentStatusRow,
  type FleetStatus,
  type ProgressMessage,
  type ReconcileReport,
  type SupervisorOp,
  type TransitionRecord,
} from './supervisor-protocol.js';
export { SupervisorRequester } from './supervisor-requester.js';
export { WorldClient, type WorldClientOptions, type WorldSubscription } from './world-client.js';
export {
  WorldChangeSchema,
  WorldQuerySchema,
  WorldRequestSchemas,
  type WorldChange,
  type WorldQuery,
  type WorldQueryInput,
  type WorldRow,
  type WorldSubscriptionInfo,
} from './world-protocol.js';
export {
  WorldConditionSchema,
  WorldFilterSchema,
  type WorldCondition,
  type WorldConditionInput,
  type WorldFilter,
  type WorldFilterInput,
  type WorldTable,
  type WorldTables,
} from './world-schema.js';
export { generateStructured, LLM_PROVIDERS, LLM_USES, type GenerateRequest, type GenerateResult, type LlmProvider, type LlmUse, type PromptBrief, type TokenUsage } from './llm-provider.js';
export { OfflineProvider } from './offline-provider.js';
export { OpenAiCompatibleProvider } from './openai-compatible-provider.js';
export { DialogueReplySchema, type DialogueReply } from './llm-tasks.js';
