/**
 * The supervisor: registry, relevance, reconciliation over pm2, and the control API on NATS.
 */
export { AgentArchive } from './fleet/agent-archive.js';
export { type AgentEntry, AgentRegistry } from './fleet/agent-registry.js';
export {
  decideStates,
  type Decision,
  type DecisionReason,
  type ScoredAgent,
  type ScoreSource,
  STATE_RANK,
  stateForScore,
} from './fleet/decide-states.js';
export { FleetController, type FleetControllerOptions, type ProgressListener } from './fleet/fleet-controller.js';
export { PortAllocator } from './fleet/port-allocator.js';
export {
  type AskAgent,
  RelevanceEvaluator,
  type RelevanceModule,
  type RelevanceModuleInput,
  type Score,
} from './fleet/relevance-evaluator.js';
export { SupervisorMetrics } from './fleet/supervisor-metrics.js';
export { downFleet, type DownResult, type LaunchOptions, upFleet, type UpResult } from './pm2/fleet-launcher.js';
export {
  type EnsuredNatsServer,
  ensureNatsServer,
  type EnsureNatsServerOptions,
  findNatsServer,
  type HostFacts,
  hostFacts,
  natsServerInstallCommand,
  natsServerVersion,
} from './pm2/nats-server-binary.js';
export { type AppSpec, type ProcessInfo, ProcessManager } from './pm2/process-manager.js';
export { type RunningSupervisor, runSupervisorProcess, type SupervisorOptions } from './process/supervisor-process.js';
