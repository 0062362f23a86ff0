import { statSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';

import { resolveConfig } from '../agent/process/agent-process.js';
import { fleetPaths } from '../shared/config/index.js';
import { checkFleet } from '../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../shared/errors/index.js';
import { agentIdentity, domainWork, ensureNatsIdentity, removeNatsIdentity, staleAgentIdentities } from '../shared/nats/index.js';
import { FleetNames } from '../shared/protocol/index.js';
import { natsAccountIncludeFile, retireNatsUsersInclude, writeNatsAccountInclude } from '../supervisor/nats-server/server-config.js';
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
  const made = (['supervisor', 'client', 'approver', 'spare', ...ids.map(agentIdentity)] as const).filter(
    (who) => ensureNatsIdentity(config.dataPath, who).created,
  );
  // With no domain schema there is no domain to tell which agents left it: nothing is deleted.
  const revoked = config.domainSchemaPath ? staleAgentIdentities(config.dataPath, ids) : [];
  for (const id of revoked) removeNatsIdentity(config.dataPath, agentIdentity(id));
  const skipped: string[] = [];
  const written = writeNatsAccountInclude(paths, { names: new FleetNames(config.fleet.name), work: domainWork(domain) }, (file, reason) =>
    skipped.push(`${file}: ${reason}`),
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
