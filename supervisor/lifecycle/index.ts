/**
 * An agent's lifecycle: the registry, starts (from the warm pool or cold, ports, the MCP probe),
 * every transition between states, archives, adoption at start-up, heartbeats and the link to a running agent.
 */
export { adoptAgents } from './agent-adoption.js';
export { AgentArchive } from './agent-archive.js';
export { AgentHeartbeats } from './agent-heartbeats.js';
export { AgentLink } from './agent-link.js';
export { AgentPool, type AgentPoolOptions } from './agent-pool.js';
export { type AgentEntry, AgentRegistry, statusRow } from './agent-registry.js';
export { AgentStarter } from './agent-starter.js';
export { RUNNING, STATE_RANK } from './agent-states.js';
export { AgentTransitions } from './agent-transitions.js';
export { type ArchiveStore, LocalArchiveStore } from './archive-store.js';
export { describeMove, emptyReport, mergeReport, moveCount, type Report, settledPart, sortReport } from './move-report.js';
export { PortAllocator } from './port-allocator.js';
