/**
 * The supervisor: registry, relevance, reconciliation over pm2, and the control API on NATS.
 */
export { AgentArchive } from './fleet/agent-archive.js';
export { AgentRegistry, type AgentEntry } from './fleet/agent-registry.js';
export { decideStates, STATE_RANK, stateForScore, type Decision, type DecisionReason, type ScoredAgent, type ScoreSource } from './fleet/decide-states.js';
export { FleetController, type FleetControllerOptions, type ProgressListener } from './fleet/fleet-controller.js';
export { downFleet, findNatsServer, upFleet, type DownResult, type LaunchOptions, type UpResult } from './pm2/fleet-launcher.js';
export { PortAllocator } from './fleet/port-allocator.js';
export { ProcessManager, type AppSpec, type ProcessInfo } from './pm2/process-manager.js';
export { RelevanceEvaluator, type AskAgent, type RelevanceModule, type RelevanceModuleInput, type Score } from './fleet/relevance-evaluator.js';
export { SupervisorMetrics } from './fleet/supervisor-metrics.js';
export { runSupervisorProcess, type RunningSupervisor, type SupervisorOptions } from './process/supervisor-process.js';
