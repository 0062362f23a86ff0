/**
 * What crosses NATS: every subject, stream, consumer and bucket name (from `[fleet] name`), and the zod schema of every request, reply, event and start context.
 */
export { type AgentMessage, AgentMessageSchema, AskReplySchema, newMessage } from './agent-message.js';
export {
  AgentControlOkSchema,
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
  ScoredOptionSchema,
  ToolStepSchema,
} from './agent-protocol.js';
export {
  type AgentStartContext,
  type AgentStartContextInput,
  AgentStartContextSchema,
  type LeaseExtension,
  LeaseExtensionSchema,
} from './agent-start-context.js';
export {
  CONCEPT_ALIASES_MAX,
  CONCEPT_TEXTS_MAX,
  ConceptOkSchema,
  ConceptRequestSchema,
  ExtractedConceptSchema,
} from './concept-protocol.js';
export { decodeVectors, EmbedInfoSchema, EmbedOkSchema, EmbedRequestSchema, encodeVectors } from './embed-protocol.js';
export { DEFAULT_FLEET_NAMES, FleetNames, isInboxSubject, REQUESTER_HEADER } from './fleet-names.js';
export { type HeardHints, HintHeaders, hintHeaders, moreFollows, readHints } from './heard-hints.js';
export {
  type DeadLetter,
  deadLetterId,
  DeadLetterSchema,
  type Job,
  JOB_PAYLOAD_MAX_BYTES,
  type JobGiveUp,
  JobGiveUpSchema,
  JobIdSchema,
  JobInputSchema,
  JobSchema,
  type ListedDeadLetter,
  ListedDeadLetterSchema,
  parseJob,
  type SkillBacklog,
  SkillBacklogSchema,
} from './job.js';
export { parseJsonOrUndefined, parseWireJson } from './parse-json.js';
export {
  type ApprovalsCursor,
  ApprovalsCursorSchema,
  type ApprovalsPage,
  ApprovalsPageSchema,
  jsonBytes,
  PENDING_ARGUMENTS_MAX_BYTES,
  type PendingCall,
  PendingCallSchema,
} from './pending-call.js';
export {
  AgentContextSchema,
  parseReconcileContext,
  parseReconcileContextText,
  type ReconcileContext,
  type ReconcileContextInput,
  ReconcileContextSchema,
} from './reconcile-context.js';
export { type SpareClaim, SpareClaimOkSchema, SpareClaimSchema } from './spare-protocol.js';
export {
  type AgentAccess,
  AgentAccessSchema,
  type AgentEndpoint,
  AgentEndpointSchema,
  type AgentStatusRow,
  AgentStatusRowSchema,
  type FleetStatus,
  FleetStatusSchema,
  type PingReply,
  PingReplySchema,
  type ProgressMessage,
  ProgressMessageSchema,
  type ReconcileReport,
  ReconcileReportSchema,
  type SupervisorOp,
  SupervisorReplySchema,
  SupervisorRequestSchemas,
  SupervisorResultSchemas,
  type TransitionRecord,
  TransitionRecordSchema,
} from './supervisor-protocol.js';
export {
  type ApprovalDecision,
  ApprovalDecisionSchema,
  CallChainSchema,
  type CallDecisionReport,
  CallDecisionReportSchema,
  type CallStatus,
  CallStatusSchema,
  CHAIN_META,
  IDEMPOTENCY_META,
  IdempotencyKeySchema,
  type ToolCallRecord,
  ToolCallRecordSchema,
} from './tool-call.js';
export {
  eventMemoryText,
  parseAgentEvent,
  parseWorldEvent,
  type WorldEvent,
  type WorldEventInput,
  WorldEventSchema,
} from './world-event.js';
export {
  type WorldChange,
  WorldChangeSchema,
  type WorldQuery,
  type WorldQueryInput,
  WorldQuerySchema,
  WorldRequestSchemas,
  WorldResultSchemas,
  type WorldRow,
  type WorldSubscriptionInfo,
} from './world-protocol.js';
