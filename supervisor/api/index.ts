/**
 * The supervisor's control API on NATS, the audit log of control actions, the tool calls waiting for approval, and where one agent reaches another's tools.
 */
export { AgentEndpoints, type AgentEndpointsOptions } from './agent-endpoints.js';
export { ApprovalBook, type DeliverDecision } from './approval-book.js';
export { auditDetails, AuditLog } from './audit-log.js';
export { ControlApi, describeRequester, type Requester } from './control-api.js';
