/**
 * The supervisor: registry, relevance, reconciliation over pm2, and the control API on NATS.
 */
export { downFleet, type DownResult, type LaunchOptions, upFleet, type UpResult } from './launch/fleet-launcher.js';
export { AgentArchive } from './lifecycle/agent-archive.js';
export { type AgentEntry, AgentRegistry } from './lifecycle/agent-registry.js';
export { STATE_RANK } from './lifecycle/agent-states.js';
export { PortAllocator } from './lifecycle/port-allocator.js';
export { SupervisorMetrics } from './metrics/supervisor-metrics.js';
export {
  type EnsuredNatsServer,
  ensureNatsServer,
  type EnsureNatsServerOptions,
  findNatsServer,
  type HostFacts,
  hostFacts,
  natsServerInstallCommand,
  natsServerVersion,
} from './nats-server/server-binary.js';
export { type AppSpec, type ProcessInfo, ProcessManager } from './pm2/process-manager.js';
export { type RunningSupervisor, runSupervisorProcess, type SupervisorOptions } from './process/supervisor-process.js';
export { decideStates, type Decision, type DecisionReason, type ScoredAgent, stateForScore } from './reconcile/decide-states.js';
export { FleetController, type FleetControllerOptions, type ProgressListener } from './reconcile/fleet-controller.js';
export {
  type AskAgent,
  RelevanceEvaluator,
  type RelevanceModule,
  type RelevanceModuleInput,
  type Score,
  type ScoreSource,
} from './relevance/relevance-evaluator.js';
