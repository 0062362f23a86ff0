import { join } from 'node:path';

/**
 * Where a fleet keeps its files under `data_dir`. Everything of one fleet lives
 * here, so two fleets (or two test runs) never share a pm2 daemon or a database.
 */
export interface FleetPaths {
  readonly data: string;
  /** PM2_HOME of the fleet's own pm2 daemon. */
  readonly pm2Home: string;
  /** The supervisor's world SurrealDB (registry, transition history). */
  readonly world: string;
  /** Private data of each agent: `agents/<id>/`. */
  readonly agents: string;
  /** One archive file per Archived agent: `archive/<id>.tar.gz`. */
  readonly archive: string;
  /** Process logs: `logs/<name>.log`. */
  readonly logs: string;
  /** Control actions the supervisor took, one JSON line each: `logs/audit.jsonl`. */
  readonly audit: string;
  /** Start contexts handed to agents and the fleet's runtime facts. */
  readonly run: string;
  /** `run/fleet.json`: the NATS URL clients use, written by `thymos up`. */
  readonly fleetFile: string;
  /** JetStream storage of a managed nats-server. */
  readonly nats: string;
  /** Node's compile cache for agents and spares, where Node has one (≥ 22.10): `cache/compile/`. */
  readonly compileCache: string;
}

export function fleetPaths(dataPath: string): FleetPaths {
  const run = join(dataPath, 'run');
  return Object.freeze({
    data: dataPath,
    pm2Home: join(dataPath, 'pm2'),
    world: join(dataPath, 'world'),
    agents: join(dataPath, 'agents'),
    archive: join(dataPath, 'archive'),
    logs: join(dataPath, 'logs'),
    audit: join(dataPath, 'logs', 'audit.jsonl'),
    run,
    fleetFile: join(run, 'fleet.json'),
    nats: join(dataPath, 'nats'),
    compileCache: join(dataPath, 'cache', 'compile'),
  });
}

/** The claim a warm spare took to become agent `id`, kept for pm2's restarts of it: `run/<id>.claim.json`. */
export function spareClaimFile(paths: FleetPaths, id: string): string {
  return join(paths.run, `${id}.claim.json`);
}

/** pm2 app names: one namespace per fleet's daemon, so plain names are enough. */
export const Pm2Names = {
  nats: 'thymos-nats',
  supervisor: 'thymos-supervisor',
  agent: (id: string) => `agent-${id}`,
  /** A spare of the warm pool, until a claim renames it `agent-<id>`. */
  spare: (n: number) => `thymos-spare-${n}`,
  /** The number of a spare's app name, or undefined if it is not a spare. */
  spareNumber: (name: string) => {
    const m = /^thymos-spare-(\d+)$/.exec(name);
    return m ? Number(m[1]) : undefined;
  },
  /** The agent id of an app name, or undefined if it is not an agent. */
  agentId: (name: string) => (name.startsWith('agent-') ? name.slice('agent-'.length) : undefined),
} as const;
