/**
 * The supervisor's control API on NATS, the audit log of control actions, and the tool calls waiting for approval.
 */
export { ApprovalBook, type DeliverDecision } from './approval-book.js';
export { auditDetails, AuditLog } from './audit-log.js';
export { ControlApi } from './control-api.js';
