/**
 * The agent's links to the fleet: control and heartbeats, heard events, the inbox, world watches and the remote embedder.
 */
export { type AgentControlChannel } from './agent-control-channel.js';
