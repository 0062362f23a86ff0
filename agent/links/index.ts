/**
 * The agent's links to the fleet: control and heartbeats, heard events and their filters, the inbox, world watches and the remote embedder.
 */
export { type AgentControlChannel } from './agent-control-channel.js';
export { appliesTo } from './event-filter.js';
