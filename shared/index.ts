export { type FleetPaths, fleetPaths, Pm2Names } from './config/fleet-paths.js';
export { type FleetInfo, fleetNatsUrl, readFleetInfo } from './config/fleet-runtime.js';
export { FleetNameSchema } from './config/fleet-settings.js';
export { LLM_PROVIDERS, LLM_USES, type LlmUse } from './config/llm-settings.js';
export {
  configFromObject,
  loadConfig,
  parseConfig,
  type ThymosConfig,
  type ThymosConfigInput,
  ThymosConfigSchema,
  type ThymosSettings,
  unreadableByDomain,
} from './config/thymos-config.js';
export {
  type AgentDefinition,
  AgentDefinitionSchema,
  AgentIdSchema,
  type Condition,
  type DomainSchema,
  DomainSchemaSchema,
  EMPTY_DOMAIN,
  type LifecycleState,
  LifecycleStateSchema,
  loadDomainSchema,
  parseDomainSchema,
  type Persona,
  type RelevanceRule,
} from './domain/domain-schema.js';
export { pklBinaryPath } from './domain/pkl-eval.js';
export {
  type WorldCondition,
  type WorldConditionInput,
  WorldConditionSchema,
  type WorldFilter,
  type WorldFilterInput,
  WorldFilterSchema,
  type WorldTable,
  type WorldTables,
} from './domain/world-schema.js';
export { createLogger, type LoggerOptions } from './engines/pino-logger.js';
export { ErrorCode, type ErrorLocation, isThymosError, ThymosError, toThymosError, type WireError } from './errors/errors.js';
export { ExitCode, exitCodeFor } from './errors/exit-codes.js';
export { exitWithError } from './errors/exit-with-error.js';
export { connectNats, type NatsConnection, type NatsConnectOptions } from './nats/nats-connection.js';
export { SupervisorRequester } from './nats/supervisor-requester.js';
export { WorldClient, type WorldClientOptions, type WorldSubscription } from './nats/world-client.js';
export { type Logger } from './platform/logger.js';
export {
  type AgentControlReply,
  AgentControlReplySchema,
  type AgentControlRequest,
  AgentControlRequestSchema,
  type AgentMode,
  AgentModeSchema,
  type AgentState,
  AgentStateSchema,
  type AgentStatusMessage,
  AgentStatusMessageSchema,
  type EventDecision,
  EventDecisionSchema,
  type RelevanceInput,
  RelevanceInputSchema,
} from './protocol/agent-protocol.js';
export { DEFAULT_FLEET_NAMES, FleetNames } from './protocol/fleet-names.js';
export {
  AgentContextSchema,
  parseReconcileContext,
  parseReconcileContextText,
  type ReconcileContext,
  type ReconcileContextInput,
  ReconcileContextSchema,
} from './protocol/reconcile-context.js';
export {
  type AgentStatusRow,
  AgentStatusRowSchema,
  type FleetStatus,
  FleetStatusSchema,
  type ProgressMessage,
  ProgressMessageSchema,
  type ReconcileReport,
  ReconcileReportSchema,
  type SupervisorOp,
  SupervisorReplySchema,
  SupervisorRequestSchemas,
  type TransitionRecord,
  TransitionRecordSchema,
} from './protocol/supervisor-protocol.js';
export {
  type WorldChange,
  WorldChangeSchema,
  type WorldQuery,
  type WorldQueryInput,
  WorldQuerySchema,
  WorldRequestSchemas,
  type WorldRow,
  type WorldSubscriptionInfo,
} from './protocol/world-protocol.js';
