import { statSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';

import { resolveConfig } from '../agent/process/agent-process.js';
import { fleetPaths, type ThymosConfig } from '../shared/config/index.js';
import { checkFleet } from '../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../shared/errors/index.js';
import { agentIdentity, domainWork, ensureNatsIdentity, removeNatsIdentity, staleAgentIdentities } from '../shared/nats/index.js';
import { FleetNames } from '../shared/protocol/index.js';
import { clusterEnforcesUsers, fleetKeySecret, keysInCluster, withFleetKeys } from '../supervisor/nats-server/fleet-keys.js';
import {
  type AgentKeys,
  natsAccountIncludeFile,
  retireNatsUsersInclude,
  writeNatsAccountInclude,
} from '../supervisor/nats-server/server-config.js';
import { commandNamed } from './command-book.js';
import { parseCommandArgs } from './fleet-args.js';

/**
 * `thymos nats-config`: for a nats-server the user runs (`[nats] url`), makes the fleet's
 * identities that are missing, deletes those of agents gone from the domain, and writes the
 * fleet's account (its users and their permissions) for that server to include inside its
 * `accounts` block, where other fleets' accounts sit beside it. Run twice, the second makes and
 * writes nothing new.
 */
export async function runNatsConfigCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandArgs(argv, commandNamed('nats-config')!) as {
    values: { config?: string; json?: boolean; 'server-config'?: string };
  };
  const config = resolveConfig(values.config);
  if (!config.nats.url) {
    throw new ThymosError(
      ErrorCode.USAGE,
      `${config.file ?? 'the configuration'} sets no [nats] url: thymos up runs the fleet's own nats-server and gives it the fleet's users itself; thymos nats-config is for a server you run`,
    );
  }
  const serverConfig = values['server-config'];
  if (!serverConfig)
    throw new ThymosError(
      ErrorCode.USAGE,
      "--server-config FILE is required: your nats-server's configuration, since nats-server reads an include path relative to the file that includes it",
    );
  const server = resolve(serverConfig);
  if (!statSync(server, { throwIfNoEntry: false })?.isFile())
    throw new ThymosError(ErrorCode.USAGE, `--server-config: ${server} is not a file; expected your nats-server's configuration`);
  const { domain } = await checkFleet(config);
  const paths = fleetPaths(config.dataPath);
  const include = `include "${includePath(relative(dirname(server), natsAccountIncludeFile(paths)))}"`;
  const ids = Object.keys(domain.agents);
  const { made, revoked, agents, cluster } = await settleIdentities(config, ids);
  const skipped: string[] = [];
  const written = writeNatsAccountInclude(
    paths,
    { names: new FleetNames(config.fleet.name), work: domainWork(domain) },
    (file, reason) => skipped.push(`${file}: ${reason}`),
    agents,
  );
  const retired = retireNatsUsersInclude(paths);
  const report = {
    file: written.file,
    changed: written.changed,
    account: written.account,
    users: written.who,
    made,
    revoked,
    skipped,
    include,
    retired: retired ?? null,
    identities: config.nats.identities,
    keys: keysInCluster(config) ? (cluster ? 'cluster' : 'here, until the cluster admits the fleet') : 'here',
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return 0;
  }
  for (const s of skipped) process.stderr.write(`thymos: warning: left out ${s}\n`);
  process.stdout.write(
    `${written.changed ? 'wrote' : 'unchanged'} ${written.file}: the account ${written.account}, ${written.who.length} users (${written.who.join(', ')})\n` +
      (made.length > 0 ? `made the identities ${made.join(', ')}\n` : '') +
      (revoked.length > 0 ? `deleted the identities of ${revoked.join(', ')}: no longer in the domain\n` : '') +
      (report.keys === 'cluster'
        ? `the agents' keys are in the cluster's key bucket ${new FleetNames(config.fleet.name).keysBucket}\n`
        : '') +
      (report.keys.startsWith('here,')
        ? "the cluster does not take the fleet yet (it admits anyone, or not the fleet's supervisor): the agents' keys made here go into its key bucket at thymos up, once its servers include the account; every other host then needs only the fleet's secret and the supervisor's, client's, approver's and spare's keys\n"
        : '') +
      (retired
        ? `emptied ${retired}, which held the users outside any account: remove its include from ${server}. The fleet's streams there stay in the server's default account; its JetStream in ${written.account} starts empty\n`
        : '') +
      `add to the accounts block of ${server} (beside any other fleet's), then reload the server (nats-server --signal reload):\n  accounts {\n    ${include}\n  }\n` +
      (config.nats.identities
        ? ''
        : `and set [nats] identities = true in ${config.file ?? 'thymos.toml'}, so the fleet connects as them\n`),
  );
  return 0;
}

/**
 * Makes the fleet's identities that are missing here and deletes those of agents gone from the
 * domain. A fleet that keeps its agents' keys in the cluster makes none the cluster's key bucket
 * holds and puts those made here there at once; `agents` is then the public key there of each agent
 * of the domain, and `cluster` false while the cluster does not take the fleet yet (its keys stay
 * here until `thymos up`). Run twice, the second makes and deletes nothing.
 */
async function settleIdentities(
  config: ThymosConfig,
  ids: readonly string[],
): Promise<{ made: string[]; revoked: string[]; agents: AgentKeys | undefined; cluster: boolean }> {
  const servers = config.nats.url!;
  // A fleet on several hosts keeps its agents' keys in the cluster: those there are the fleet's, made by no host again.
  const cluster = keysInCluster(config) ? await clusterKeys(config, servers, ids) : undefined;
  const inCluster = new Set(cluster?.map((k) => k.who));
  const made = (['supervisor', 'client', 'approver', 'spare', ...ids.map(agentIdentity)] as const).filter(
    (who) => !inCluster.has(who) && ensureNatsIdentity(config.dataPath, who).created,
  );
  // With no domain schema there is no domain to tell which agents left it: nothing is deleted.
  const revoked = config.domainSchemaPath ? staleAgentIdentities(config.dataPath, ids) : [];
  for (const id of revoked) removeNatsIdentity(config.dataPath, agentIdentity(id));
  // The keys made here go into the cluster's bucket at once. One of an agent gone from the domain stays
  // there, sealed (the only copy of it), but the account no longer names it.
  const agents = cluster
    ? await withFleetKeys(config, servers, async (keys) => {
        await keys.publish(config.dataPath, ids);
        return await keys.publicKeys(ids);
      })
    : undefined;
  return { made, revoked, agents, cluster: cluster !== undefined };
}

/**
 * The public keys the cluster's key bucket holds for agents `ids`, or undefined when the cluster
 * does not take the fleet yet: it admits anyone (it has no users in force: its JetStream is not the
 * fleet's), or refuses the supervisor (its servers do not include the account): the fleet being set
 * up. No server answering is NATS_UNAVAILABLE, never taken for that: keys made here then would
 * not be the cluster's. The fleet's secret unset is an error either way.
 */
async function clusterKeys(config: ThymosConfig, servers: string, ids: readonly string[]): Promise<AgentKeys | undefined> {
  fleetKeySecret(config);
  if (!(await clusterEnforcesUsers(config, servers))) return undefined;
  try {
    return await withFleetKeys(config, servers, (keys) => keys.publicKeys(ids));
  } catch (err) {
    if (err instanceof ThymosError && err.code === ErrorCode.UNAUTHORIZED) return undefined;
    throw err;
  }
}

/**
 * `path` as nats-server reads it between double quotes: literally, with `/` between folders
 * (it takes no escapes, so a path with a quote, a backslash or a control character cannot be
 * written there).
 */
function includePath(path: string): string {
  const slashed = sep === '/' ? path : path.split(sep).join('/');
  if (/["\\\p{Cc}]/u.test(slashed))
    throw new ThymosError(
      ErrorCode.USAGE,
      `the include path ${JSON.stringify(slashed)} has a quote, a backslash or a control character, which nats-server cannot read in an include: move the data directory or the server's configuration`,
    );
  return slashed;
}
