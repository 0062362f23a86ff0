/**
 * `thymos/client`: what a game loop or a job loop needs to drive a running fleet — connect,
 * the approver (`approver`, with a key of its own), reconcile, publish, an MCP client per agent, the world store, status — the config and the
 * domain schema a loop reads, and the types and errors of those calls. It loads neither SurrealDB nor pm2 nor the MCP server side (the
 * architecture test holds it to that); `upFleet`/`downFleet` come from `thymos` or
 * `thymos/supervisor`.
 */
export { loadConfig, type ThymosConfig } from '../shared/config/index.js';
export {
  type AgentDefinition,
  type DomainSchema,
  type LifecycleState,
  loadDomainSchema,
  type WorldFilterInput,
} from '../shared/domain/index.js';
export {
  ErrorCode,
  type ErrorLocation,
  ExitCode,
  exitCodeFor,
  exitWithError,
  isThymosError,
  ThymosError,
  type WireError,
} from '../shared/errors/index.js';
export { WorldClient, type WorldSubscription } from '../shared/nats/index.js';
export {
  type AgentMode,
  type AgentState,
  type AgentStatusRow,
  type CallDecisionReport,
  type EventDecision,
  EventDecisionSchema,
  type FleetStatus,
  FleetStatusSchema,
  type ListedDeadLetter,
  type PendingCall,
  type ProgressMessage,
  type ReconcileContext,
  type ReconcileContextInput,
  ReconcileContextSchema,
  type ReconcileReport,
  ReconcileReportSchema,
  type SkillBacklog,
  type ToolCallRecord,
  type TransitionRecord,
  type WorldChange,
  type WorldEventInput,
  type WorldQueryInput,
  type WorldRow,
} from '../shared/protocol/index.js';
export { type TalkAnswer, type TalkOptions } from './agent-talk.js';
export { type Approver, approver } from './approver.js';
export { type AgentClient, connect, type ConnectOptions, type Fleet, type Jobs, type OperationOptions } from './fleet-client.js';
