/**
 * The fleet: registry, relevance, decisions, reconcile, the routing of events to their hearers and every transition of an agent, ports, archives and metrics.
 */
export { AgentArchive } from './agent-archive.js';
export { AgentLink } from './agent-link.js';
export { AgentPool, type AgentPoolOptions } from './agent-pool.js';
export { type AgentEntry, AgentRegistry } from './agent-registry.js';
export {
  decideStates,
  type Decision,
  type DecisionReason,
  type ScoredAgent,
  type ScoreSource,
  STATE_RANK,
  stateForScore,
} from './decide-states.js';
export { EventRouter, type EventRouterOptions } from './event-router.js';
export { FleetController, type FleetControllerOptions, type ProgressListener } from './fleet-controller.js';
export { fleetPins } from './fleet-pins.js';
export { PortAllocator } from './port-allocator.js';
export { type AskAgent, RelevanceEvaluator, type RelevanceModule, type RelevanceModuleInput, type Score } from './relevance-evaluator.js';
export { SupervisorMetrics } from './supervisor-metrics.js';
export { type WorkerState, WorkScores } from './work-scores.js';
