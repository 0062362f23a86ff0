/**
 * `thymos/client`: what a game loop or a job loop needs to drive a running fleet — connect,
 * the approver (`approver`, with a key of its own), reconcile, publish, an MCP client per agent, the world store, status — the config and the
 * domain schema a loop reads, and the types and errors of those calls. It loads neither SurrealDB nor pm2 nor the MCP server side (the
 * architecture test holds it to that); `upFleet`/`downFleet` come from `thymos` or
 * `thymos/supervisor`.
 */
export { loadConfig, type ThymosConfig } from '../shared/config/thymos-config.js';
export { type AgentDefinition, type DomainSchema, type LifecycleState, loadDomainSchema } from '../shared/domain/domain-schema.js';
export { type WorldFilterInput } from '../shared/domain/world-schema.js';
export { ErrorCode, type ErrorLocation, isThymosError, ThymosError, type WireError } from '../shared/errors/errors.js';
export { ExitCode, exitCodeFor } from '../shared/errors/exit-codes.js';
export { exitWithError } from '../shared/errors/exit-with-error.js';
export { WorldClient, type WorldSubscription } from '../shared/nats/world-client.js';
export { type AgentMode, type AgentState, type EventDecision, EventDecisionSchema } from '../shared/protocol/agent-protocol.js';
export { type ListedDeadLetter, type SkillBacklog } from '../shared/protocol/job.js';
export { type ReconcileContext, type ReconcileContextInput, ReconcileContextSchema } from '../shared/protocol/reconcile-context.js';
export {
  type AgentStatusRow,
  type FleetStatus,
  FleetStatusSchema,
  type ProgressMessage,
  type ReconcileReport,
  ReconcileReportSchema,
  type TransitionRecord,
} from '../shared/protocol/supervisor-protocol.js';
export { type CallDecisionReport, type PendingCall, type ToolCallRecord } from '../shared/protocol/tool-call.js';
export { type WorldEventInput } from '../shared/protocol/world-event.js';
export { type WorldChange, type WorldQueryInput, type WorldRow } from '../shared/protocol/world-protocol.js';
export { type TalkAnswer, type TalkOptions } from './agent-talk.js';
export { type Approver, approver } from './approver.js';
export { type AgentClient, connect, type ConnectOptions, type Fleet, type Jobs, type OperationOptions } from './fleet-client.js';
