/**
 * What crosses NATS: every subject, stream, consumer and bucket name (from `[fleet] name`), and the zod schema of every request, reply, event and start context.
 */
export { type AgentMessage, AgentMessageSchema, INBOX_STREAM, INBOX_SUBJECTS, inboxConsumerName, newMessage } from './agent-message.js';
export { type AgentControlReply, AgentControlReplySchema, type AgentControlRequest, AgentControlRequestSchema, type AgentMode, AgentModeSchema, type AgentState, AgentStateSchema, type AgentStatusMessage, AgentStatusMessageSchema, type EventDecision, EventDecisionSchema, type RelevanceInput, RelevanceInputSchema, ScoredOptionSchema } from './agent-protocol.js';
export { decodeVectors, EmbedInfoSchema, EmbedReplySchema, EmbedRequestSchema, encodeVectors } from './embed-protocol.js';
export { Subjects } from './fleet-names.js';
export { parseJsonOrUndefined, parseWireJson } from './parse-json.js';
export { type AgentStatusRow, AgentStatusRowSchema, type FleetStatus, FleetStatusSchema, type PingReply, PingReplySchema, type ProgressMessage, ProgressMessageSchema, type ReconcileReport, ReconcileReportSchema, type SupervisorOp, type SupervisorReply, SupervisorReplySchema, SupervisorRequestSchemas, type TransitionRecord, TransitionRecordSchema } from './supervisor-protocol.js';
export { agentConsumerName, EVENT_STREAM, EVENT_SUBJECTS, eventMemoryText, eventSubject, parseWorldEvent, type WorldEvent, type WorldEventInput, WorldEventSchema } from './world-event.js';
export { type WorldChange, WorldChangeSchema, type WorldQuery, type WorldQueryInput, WorldQuerySchema, WorldRequestSchemas, type WorldRow, type WorldSubscriptionInfo, WorldSubscriptionSchema } from './world-protocol.js';
