import { connect } from '../client/fleet-client.js';
import { fleetPaths, Pm2Names, type ThymosConfig } from '../shared/config/index.js';
import { checkFleet, type DomainSchema } from '../shared/domain/index.js';
import { ExitCode } from '../shared/errors/index.js';
import {
  admission,
  agentIdentity,
  domainWork,
  ensureNatsIdentity,
  fleetNatsLink,
  removeNatsIdentity,
  staleAgentIdentities,
} from '../shared/nats/index.js';
import { FleetNames } from '../shared/protocol/index.js';
import { upFleet } from '../supervisor/launch/fleet-launcher.js';
import { writeNatsAccountInclude } from '../supervisor/nats-server/server-config.js';
import { ProcessManager } from '../supervisor/pm2/process-manager.js';
import { commandNamed } from './command-book.js';
import { parseFleetArgs } from './fleet-args.js';

const out = (text: string) => process.stdout.write(`${text}\n`);
const err = (text: string) => process.stderr.write(`${text}\n`);

/** What a reload changed: the agents the domain gained and lost, and those of the lost that were running. */
export interface ReloadReport {
  added: string[];
  removed: string[];
  stopped: string[];
  supervisor_pid: number | null;
}

/**
 * `thymos reload`: applies an edited domain to a running fleet. The domain is evaluated and
 * checked first (a bad one changes nothing). Agents it no longer names that run are stopped
 * through the supervisor (a snapshot; their data stays on disk), then the supervisor is
 * restarted on the new domain: as it starts, every agent of the domain gets its NATS identity and
 * the identities of agents gone from it are deleted, and the managed nats-server reloads its
 * users, so a removed agent's key is refused from then on (and its connections are closed).
 *
 * With a nats-server the user runs (`[nats] url` and `[nats] identities`), Thymos cannot reload
 * that server: the fleet's account file is written again, and until that server admits every agent of the
 * new domain the command says to reload it and exits 1, leaving the running supervisor as it was.
 * Run twice, the second reload finds nothing added or removed and restarts the supervisor again.
 */
export async function runReloadCommand(argv: string[]): Promise<number> {
  const args = parseFleetArgs(argv, commandNamed('reload')!);
  const config = args.config;
  const { domain } = await checkFleet(config);
  const wanted = new Set(Object.keys(domain.agents));
  const fleet = await connect(config);
  let report: ReloadReport;
  try {
    const before = (await fleet.status()).agents;
    const removedRows = before.filter((a) => !wanted.has(a.id));
    const known = new Set(before.map((a) => a.id));
    report = {
      added: [...wanted].filter((id) => !known.has(id)).sort(),
      removed: removedRows.map((a) => a.id).sort(),
      stopped: [],
      supervisor_pid: null,
    };
    if (config.nats.url && config.nats.identities && !(await ownServerReady(config, domain, report.added))) return ExitCode.FAILURE;
    for (const row of removedRows) {
      if (row.state !== 'active' && row.state !== 'listening') continue;
      await fleet.stop(row.id);
      report.stopped.push(row.id);
    }
  } finally {
    await fleet.close();
  }
  report.supervisor_pid = await restartSupervisor(config, report.removed);
  if (args.json) out(JSON.stringify(report));
  else {
    out(`reloaded ${config.domainSchemaPath ?? 'the domain'}: supervisor pid ${report.supervisor_pid ?? '?'}, ${wanted.size} agents`);
    for (const id of report.added) out(`added ${id}: it has its NATS identity and starts when reconciled`);
    for (const id of report.removed)
      out(
        `removed ${id}: ${report.stopped.includes(id) ? 'stopped (a snapshot), ' : ''}its data kept in ${config.dataPath}/agents/${id}, its NATS identity revoked`,
      );
    if (report.added.length === 0 && report.removed.length === 0) out('no agent added or removed; the rest of the domain is in force');
  }
  return ExitCode.OK;
}

/**
 * A server the user runs: writes the fleet's users again (keys made for the added agents, those of
 * agents gone deleted), then checks that it admits every added agent. False, with what to do on
 * stderr, while it does not: that server's users are reloaded by its owner, not by Thymos.
 */
async function ownServerReady(config: ThymosConfig, domain: DomainSchema, added: readonly string[]): Promise<boolean> {
  const ids = Object.keys(domain.agents);
  const url = config.nats.url!;
  // The keys of agents gone from the domain, read before they are deleted: the server must refuse them once reloaded.
  const stale = staleAgentIdentities(config.dataPath, ids);
  const staleLinks = stale.map((id) => ({ id, link: fleetNatsLink(config, agentIdentity(id), url) }));
  for (const id of ids) ensureNatsIdentity(config.dataPath, agentIdentity(id));
  for (const id of stale) removeNatsIdentity(config.dataPath, agentIdentity(id));
  const written = writeNatsAccountInclude(fleetPaths(config.dataPath), {
    names: new FleetNames(config.fleet.name),
    work: domainWork(domain),
  });
  const waiting: string[] = [];
  for (const id of added)
    if ((await admission(url, fleetNatsLink(config, agentIdentity(id), url), 3000)).outcome !== 'admitted')
      waiting.push(`admits no ${agentIdentity(id)}`);
  for (const { id, link } of staleLinks)
    if (link.seed && (await admission(url, link, 3000)).outcome === 'admitted') waiting.push(`still admits ${agentIdentity(id)}`);
  if (waiting.length === 0) return true;
  err(
    `thymos: ${written.changed ? 'wrote' : 'unchanged'} ${written.file}; the nats-server at ${url} ${waiting.join(', ')}: reload that server (nats-server --signal reload), then run thymos reload again`,
  );
  return false;
}

/** Restarts the supervisor under pm2 on the configuration as it is now, and stops any removed agent pm2 still runs (one a reconcile woke meanwhile). */
async function restartSupervisor(config: ThymosConfig, removed: readonly string[]): Promise<number | null> {
  const paths = fleetPaths(config.dataPath);
  const pm = await ProcessManager.connect(paths.pm2Home);
  try {
    await pm.delete(Pm2Names.supervisor);
    // Whatever its status (online, launching, waiting to restart): the new supervisor adopts only the domain's agents.
    for (const id of removed) if (await pm.describe(Pm2Names.agent(id))) await pm.delete(Pm2Names.agent(id));
  } finally {
    pm.disconnect();
  }
  return (await upFleet(config)).supervisorPid;
}
