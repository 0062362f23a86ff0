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
} from './protocol/agent-protocol.js';
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
} from './domain/domain-schema.js';
export { ErrorCode, isThymosError, ThymosError, toThymosError, type ErrorLocation, type WireError } from './errors/errors.js';
export { createLogger, type Logger, type LoggerOptions } from './platform/logger.js';
export { connectNats, type NatsConnection, type NatsConnectOptions } from './nats/nats-connection.js';
export { DEFAULT_FLEET_NAMES, FleetNames } from './protocol/fleet-names.js';
export { FleetNameSchema } from './config/fleet-settings.js';
export {
  configFromObject,
  loadConfig,
  parseConfig,
  ThymosConfigSchema,
  type ThymosConfig,
  type ThymosConfigInput,
  type ThymosSettings,
} from './config/thymos-config.js';
export { fleetPaths, Pm2Names, type FleetPaths } from './config/fleet-paths.js';
export { fleetNatsUrl, readFleetInfo, type FleetInfo } from './config/fleet-runtime.js';
export {
  AgentContextSchema,
  parseReconcileContext,
  parseReconcileContextText,
  ReconcileContextSchema,
  type AgentContext,
  type ReconcileContext,
  type ReconcileContextInput,
} from './protocol/reconcile-context.js';
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
} from './protocol/supervisor-protocol.js';
export { SupervisorRequester } from './nats/supervisor-requester.js';
export { WorldClient, type WorldClientOptions, type WorldSubscription } from './nats/world-client.js';
export {
  WorldChangeSchema,
  WorldQuerySchema,
  WorldRequestSchemas,
  type WorldChange,
  type WorldQuery,
  type WorldQueryInput,
  type WorldRow,
  type WorldSubscriptionInfo,
} from './protocol/world-protocol.js';
export {
  WorldConditionSchema,
  WorldFilterSchema,
  type WorldCondition,
  type WorldConditionInput,
  type WorldFilter,
  type WorldFilterInput,
  type WorldTable,
  type WorldTables,
} from './domain/world-schema.js';
export { LLM_PROVIDERS, LLM_USES, type LlmUse } from './config/llm-settings.js';
