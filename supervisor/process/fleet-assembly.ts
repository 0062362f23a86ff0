import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import type { FleetPaths, ThymosConfig } from '../../shared/config/index.js';
import { aliasTable, type DomainSchema } from '../../shared/domain/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { FleetNames } from '../../shared/protocol/index.js';
import { AgentArchive } from '../lifecycle/agent-archive.js';
import { AgentHeartbeats, grantedToolNames } from '../lifecycle/agent-heartbeats.js';
import type { AgentLink } from '../lifecycle/agent-link.js';
import type { AgentPool } from '../lifecycle/agent-pool.js';
import type { AgentRegistry } from '../lifecycle/agent-registry.js';
import { AgentStarter } from '../lifecycle/agent-starter.js';
import { AgentTransitions } from '../lifecycle/agent-transitions.js';
import type { ArchiveStore } from '../lifecycle/archive-store.js';
import { PortAllocator } from '../lifecycle/port-allocator.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';
import type { NatsAccess } from '../nats-server/nats-access.js';
import type { AgentOwnership } from '../ownership/agent-ownership.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import { FleetController } from '../reconcile/fleet-controller.js';
import { fleetPins, fleetPorts } from '../reconcile/pins.js';
import { type Journal, ReconcileJournal } from '../reconcile/reconcile-journal.js';
import type { RelevanceEvaluator } from '../relevance/relevance-evaluator.js';

export interface FleetAssemblyOptions {
  config: ThymosConfig;
  domain: DomainSchema;
  paths: FleetPaths;
  registry: AgentRegistry;
  processes: ProcessManager;
  nc: NatsConnection;
  names: FleetNames;
  link: AgentLink;
  /** The NATS server agents are told to use. */
  natsUrl: string;
  evaluator: RelevanceEvaluator;
  metrics: SupervisorMetrics;
  logger: Logger;
  /** The bundled `thymos` command agents run. */
  thymosBin: string;
  /** Which agents this supervisor may move. */
  ownership: AgentOwnership;
  /** Where Archived agents' data is kept; the fleet's `archive/` folder when not given. */
  archives?: ArchiveStore | undefined;
  jsm?: JetStreamManager | undefined;
  pool?: AgentPool | undefined;
  access?: NatsAccess | undefined;
  /** Called when an agent stops running (Dormant or Archived): its live subscriptions end. */
  onStopped?: ((id: string) => Promise<unknown>) | undefined;
  /** Where a reconcile's context waits until it ends; a file of the data directory by default. */
  journal?: Journal | undefined;
}

/**
 * The fleet controller and the collaborators it is given: ports, starts, transitions, archives,
 * heartbeats, the reconcile journal and the pins. On one host it reconciles every agent of the domain.
 */
export function assembleFleet(o: FleetAssemblyOptions): FleetController {
  const ports = new PortAllocator({
    min: o.config.supervisor.agent_port_min,
    max: o.config.supervisor.agent_port_max,
    host: o.config.agent.host,
    pinned: fleetPorts(o.domain, o.config),
  });
  const heartbeats = new AgentHeartbeats(grantedToolNames(o.domain));
  const starter = new AgentStarter({ ...o, ports, aliases: aliasTable(o.domain) });
  const archive = new AgentArchive(o.paths, o.archives);
  const transitions = new AgentTransitions({ ...o, ports, archive, starter, heartbeats });
  return new FleetController({
    ...o,
    agents: Object.keys(o.domain.agents),
    ports,
    transitions,
    heartbeats,
    journal: o.journal ?? new ReconcileJournal(o.paths.run, o.logger),
    pins: fleetPins(o.domain, o.config),
  });
}
