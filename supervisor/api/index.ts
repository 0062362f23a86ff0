/**
 * The supervisor's control API on NATS and the audit log of control actions.
 */
export { auditDetails, AuditLog } from './audit-log.js';
export { ControlApi } from './control-api.js';
