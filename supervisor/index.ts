/**
 * The supervisor: registry, relevance, reconciliation over pm2, and the control API on NATS.
 */
export { AgentArchive } from './agent-archive.js';
export { AgentRegistry, type AgentEntry } from './agent-registry.js';
export { decideStates, STATE_RANK, stateForScore, type Decision, type DecisionReason, type ScoredAgent, type ScoreSource } from './decide-states.js';
export { FleetController, type FleetControllerOptions, type ProgressListener } from './fleet-controller.js';
export { downFleet, findNatsServer, upFleet, type DownResult, type LaunchOptions, type UpResult } from './fleet-launcher.js';
export { PortAllocator } from './port-allocator.js';
export { ProcessManager, type AppSpec, type ProcessInfo } from './process-manager.js';
export { RelevanceEvaluator, type AskAgent, type RelevanceModule, type RelevanceModuleInput, type Score } from './relevance-evaluator.js';
export { SupervisorMetrics } from './supervisor-metrics.js';
export { runSupervisorProcess, type RunningSupervisor, type SupervisorOptions } from './supervisor-process.js';
