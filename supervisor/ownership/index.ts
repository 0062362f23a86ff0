/**
 * Ownership: which supervisor may move an agent and write its data, and the fencing token each claim carries;
 * on one host, the fleet's data lock.
 */
export type { AgentOwnership } from './agent-ownership.js';
export { LocalOwnership } from './local-ownership.js';
