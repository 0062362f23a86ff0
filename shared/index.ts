export {
  AgentControlReplySchema,
  AgentControlRequestSchema,
  AgentModeSchema,
  AgentStateSchema,
  AgentStatusMessageSchema,
  type AgentControlReply,
  type AgentControlRequest,
  type AgentMode,
  type AgentState,
  type AgentStatusMessage,
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
