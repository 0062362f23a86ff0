import { existsSync, mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { type FleetPaths, fleetPaths, Pm2Names, readFleetInfo, type ThymosConfig, writeFleetInfo } from '../../shared/config/index.js';
import { checkFleet, type FleetWarning } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { admission, domainWork, ensureNatsIdentity, fleetNatsLink, natsSecretsDir, readNatsSeed } from '../../shared/nats/index.js';
import { isAlive, portTaken, readLockPid } from '../../shared/platform/index.js';
import { FleetNames, type FleetStatus, type ProgressMessage, type ReconcileReport } from '../../shared/protocol/index.js';
import { keysInCluster, withFleetKeys } from '../nats-server/fleet-keys.js';
import { findNatsServer } from '../nats-server/server-binary.js';
import {
  natsAccountIncludeFile,
  natsAccountIncludeIsCurrent,
  natsServerConfigFile,
  type NatsUsers,
  reloadNatsUsers,
  writeNatsServerConfig,
} from '../nats-server/server-config.js';
import { AppLaunch } from '../pm2/app-launch.js';
import { freePort } from '../pm2/free-port.js';
import { IDLE_PROCESS_NODE_ARGS, ProcessManager } from '../pm2/process-manager.js';
import { thymosBinPath } from '../pm2/thymos-bin.js';
import { refuseOtherSupervisor, stopAgentsThroughSupervisor, waitForSupervisor } from './supervisor-answers.js';

export interface UpResult {
  /** True when the fleet was already running and nothing was started. */
  alreadyRunning: boolean;
  natsUrl: string;
  supervisorPid: number | null;
  pm2Home: string;
}

export interface LaunchOptions {
  /** Called with a line for each step (the CLI prints them). */
  onStep?: (line: string) => void;
  /** Called with each warning about the config and the domain (default: as a step). */
  onWarning?: (warning: FleetWarning) => void;
  /** Warnings are errors: `up` fails with CONFIG_INVALID before it starts anything. */
  strict?: boolean;
}

/**
 * `thymos up`: under the fleet's own PM2_HOME, a nats-server (JetStream, loopback) when
 * `[nats] url` is unset, then the supervisor; returns once the supervisor answers. The config
 * and the domain are checked first (as `thymos validate` does) and the NATS port must be free,
 * so bad input starts nothing; a process that exits while it starts fails `up` at once with
 * its own error, and whatever `up` started is stopped again.
 */
export async function upFleet(config: ThymosConfig, options: LaunchOptions = {}): Promise<UpResult> {
  const step = options.onStep ?? (() => undefined);
  const paths = fleetPaths(config.dataPath);
  const { domain, warnings } = await checkFleet(config, options.strict);
  for (const w of warnings) (options.onWarning ?? ((x: FleetWarning) => step(`warning: ${x.message}`)))(w);
  const natsBinary = config.nats.url ? undefined : findNatsServer();
  const bin = thymosBinPath();
  for (const dir of [paths.data, paths.logs, paths.run]) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      throw new ThymosError(
        ErrorCode.WRITE_FAILED,
        `cannot create ${dir} (data_dir${config.file ? ` of ${config.file}` : ''}): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
  const daemonPid = readLockPid(join(paths.pm2Home, 'pm2.pid'));
  const daemonWasUp = daemonPid !== undefined && isAlive(daemonPid);
  const pm = await ProcessManager.connect(paths.pm2Home);
  const launch = await AppLaunch.begin(pm);
  try {
    const running = await pm.describe(Pm2Names.supervisor);
    const users = { names: new FleetNames(config.fleet.name), work: domainWork(domain) };
    const natsUrl = config.nats.url ?? (await ensureNats(config, pm, launch, natsBinary!, users, step));
    if (config.nats.url) writeFleetInfo(config, { nats_url: natsUrl, managed_nats: false, nats_port: null });
    if (config.nats.url) await checkOwnServer(config, paths, { ...users, ids: Object.keys(domain.agents) }, step);
    // A supervisor of this fleet started from another host or data directory answers on the same server.
    if (config.nats.url && running?.status !== 'online') await refuseOtherSupervisor(config, natsUrl);
    if (running?.status === 'online') {
      return { alreadyRunning: true, natsUrl, supervisorPid: running.pid, pm2Home: paths.pm2Home };
    }
    if (running) await pm.delete(Pm2Names.supervisor);
    step('starting the supervisor');
    const args = ['supervisor', '--nats-url', natsUrl];
    if (config.file) args.push('--config', config.file);
    const logFile = join(paths.logs, 'supervisor.log');
    let answer: FleetStatus | undefined;
    const spec = {
      name: Pm2Names.supervisor,
      script: bin,
      args,
      nodeArgs: [...IDLE_PROCESS_NODE_ARGS],
      cwd: config.file ? dirname(config.file) : process.cwd(),
    };
    await launch.start(
      { ...spec, waitReady: true, listenTimeoutMs: 60_000, killTimeoutMs: 10_000, autorestart: true, restartDelayMs: 200, logFile },
      'the supervisor',
      async (signal) => {
        const pid = async () => (await pm.describe(Pm2Names.supervisor))?.pid ?? undefined;
        answer = await waitForSupervisor(config, natsUrl, { pid, ms: 60_000, log: logFile, signal });
      },
    );
    const sup = await pm.describe(Pm2Names.supervisor);
    const elsewhere = answer && answer.supervisor.host !== config.host.name ? answer.supervisor.host : undefined;
    step(
      `supervisor ${elsewhere ? `standing by (pid ${sup?.pid}): host ${elsewhere} coordinates the fleet, and this one takes over if its lease ends` : `ready (pid ${sup?.pid})`}; pm2 ls with PM2_HOME=${paths.pm2Home} shows the fleet`,
    );
    return { alreadyRunning: false, natsUrl, supervisorPid: sup?.pid ?? null, pm2Home: paths.pm2Home };
  } catch (err) {
    step('stopping what was started');
    await launch.undo();
    if (!daemonWasUp) await pm.killDaemon().catch(() => undefined);
    throw err;
  } finally {
    launch.end();
    pm.disconnect();
  }
}

/**
 * A server the user runs (`[nats] url`) must answer, over TLS when `[nats] tls_*` asks for it; set
 * up with the fleet's users (`[nats] identities`) or credentials (`[nats] credentials`), it must
 * admit the supervisor, the client and the spares as themselves and nobody without an identity.
 * Otherwise `up` starts nothing and says what to do.
 */
async function checkOwnServer(
  config: ThymosConfig,
  paths: FleetPaths,
  { ids, ...users }: NatsUsers & { ids: string[] },
  step: (line: string) => void,
): Promise<void> {
  const url = config.nats.url!;
  const tls = config.natsTls;
  const over = tls ? ' over TLS' : '';
  const keyed = config.nats.identities || config.natsCredentialsPath !== undefined;
  const fix = config.natsCredentialsPath
    ? `give the server the operator and account of the credentials in ${config.natsCredentialsPath} (operator mode), or correct those files`
    : `run thymos nats-config --server-config <that server's configuration>, add the include line it prints (for ${natsAccountIncludeFile(paths)}) inside the server's accounts block and reload the server`;
  const fixed = ['supervisor', 'client', 'spare'] as const;
  const missing = config.nats.identities ? fixed.filter((who) => !readNatsSeed(config.dataPath, who)) : [];
  if (missing.length > 0)
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `[nats] identities is set but the fleet has no NATS identity for ${missing.join(', ')} in ${natsSecretsDir(config.dataPath)}: ${fix}`,
    );
  const nobody = await admission(url, { tls }, 3000);
  if (nobody.outcome === 'unreachable') {
    const check = tls
      ? "check the URL (its host as the server's certificate names it) and [nats] tls_ca, tls_cert, tls_key"
      : 'start it, or check the URL';
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `the nats-server at ${url} ([nats] url) cannot be reached${over}: ${nobody.reason ?? 'no answer'}; ${check}`,
    );
  }
  if (!keyed) {
    if (nobody.outcome === 'refused')
      throw new ThymosError(
        ErrorCode.NATS_UNAVAILABLE,
        `the nats-server at ${url} asks for an identity: set [nats] identities = true and ${fix} (or [nats] credentials, for a server in operator mode)`,
      );
    step(`the nats-server at ${url} answers${over}`);
    return;
  }
  // A server that admits anyone has not got the fleet's users in force: its keys would prove nothing there.
  if (nobody.outcome === 'admitted')
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `the nats-server at ${url} admits connections with no identity, so the fleet's users are not in force there: ${fix}`,
    );
  // What the server includes must say what each identity may do today: after an upgrade, or a change of the agents' work, it says otherwise.
  const agents = keysInCluster(config) ? await withFleetKeys(config, url, (keys) => keys.publicKeys(ids)) : undefined;
  if (config.nats.identities && !natsAccountIncludeIsCurrent(paths, users, agents)) {
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `${natsAccountIncludeFile(paths)} does not say what the fleet's identities may do today (Thymos was upgraded, or the agents' work changed): ${fix}`,
    );
  }
  const refused: string[] = [];
  for (const who of fixed) if ((await admission(url, fleetNatsLink(config, who, url), 3000)).outcome !== 'admitted') refused.push(who);
  if (refused.length > 0)
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `the nats-server at ${url} does not admit the fleet's identities ${refused.join(', ')}: ${fix}`,
    );
  step(`the nats-server at ${url} admits the fleet's identities${over} and nobody else`);
}

/**
 * The fleet's own nats-server: on the port of `[nats] port`, else the one its last run used
 * (`data/run/fleet.json`), else a free one; started unless it is online. A port another
 * process holds fails at once, naming where the port comes from.
 */
async function ensureNats(
  config: ThymosConfig,
  pm: ProcessManager,
  launch: AppLaunch,
  binary: string,
  users: NatsUsers,
  step: (line: string) => void,
): Promise<string> {
  const paths = fleetPaths(config.dataPath);
  const previous = readFleetInfo(config);
  const remembered = previous?.managed_nats ? previous.nats_port : null;
  const port = config.nats.port || remembered || (await freePort());
  const natsUrl = `nats://127.0.0.1:${port}`;
  const nats = await pm.describe(Pm2Names.nats);
  // Who may connect: the supervisor, the client library and CLI, the approver, the pool's spares,
  // and each agent of the domain (the supervisor makes theirs as it starts). Made when missing.
  const made = (['supervisor', 'client', 'approver', 'spare', 'system'] as const).filter(
    (who) => ensureNatsIdentity(paths.data, who).created,
  );
  if (nats?.status === 'online') {
    // Without its configuration, nothing says the running server holds the fleet's users: it may admit anyone.
    if (!existsSync(natsServerConfigFile(paths))) {
      throw new ThymosError(
        ErrorCode.NATS_UNAVAILABLE,
        `the fleet's nats-server (pid ${nats.pid}) runs, but its configuration ${natsServerConfigFile(paths)} is gone, so it may admit anyone: run thymos down, then thymos up, to restart it with the fleet's identities`,
      );
    }
    if (made.length > 0 && nats.pid) {
      reloadNatsUsers(paths, port, nats.pid, users);
      step(`made the NATS identities ${made.join(', ')} and reloaded nats-server's users`);
    }
  } else {
    if (nats) await pm.delete(Pm2Names.nats);
    if (await portTaken('127.0.0.1', port)) {
      const where = config.nats.port
        ? `[nats] port in ${config.file ?? 'the configuration'}`
        : `remembered from the fleet's last run in ${paths.fleetFile}`;
      const fix = config.nats.port ? 'set another [nats] port' : `delete ${paths.fleetFile} to have a free port chosen`;
      throw new ThymosError(
        ErrorCode.PORT_IN_USE,
        `127.0.0.1:${port}, the fleet's NATS port (${where}), is in use by another process: stop it, or ${fix}`,
        {
          details: { port },
        },
      );
    }
    mkdirSync(paths.nats, { recursive: true });
    const configFile = writeNatsServerConfig(paths, port, users).file;
    step(`starting nats-server on 127.0.0.1:${port} (JetStream in ${paths.nats}, users in ${configFile})`);
    const logFile = join(paths.logs, 'nats-server.log');
    await launch.start(
      {
        name: Pm2Names.nats,
        script: binary,
        args: ['-c', configFile],
        interpreter: 'none',
        killTimeoutMs: 5000,
        autorestart: true,
        restartDelayMs: 200,
        logFile,
      },
      'nats-server',
      (signal) => waitForPort(port, 10_000, logFile, signal),
    );
  }
  writeFleetInfo(config, { nats_url: natsUrl, managed_nats: true, nats_port: port });
  return natsUrl;
}

export interface DownResult {
  /** False when no pm2 daemon ran for this fleet. */
  wasRunning: boolean;
  /** What stopping the agents did, or undefined when the supervisor could not be asked. */
  report: ReconcileReport | undefined;
}

/**
 * `thymos down`: asks the supervisor to snapshot and stop every agent, then stops the
 * supervisor, the managed nats-server and the fleet's pm2 daemon. If the supervisor does
 * not answer, agents are stopped by pm2 directly (SIGINT: each snapshots on its way out).
 */
export async function downFleet(
  config: ThymosConfig,
  options: LaunchOptions & { onProgress?: (p: ProgressMessage) => void } = {},
): Promise<DownResult> {
  const step = options.onStep ?? (() => undefined);
  const paths = fleetPaths(config.dataPath);
  const daemonPid = readLockPid(join(paths.pm2Home, 'pm2.pid'));
  if (daemonPid === undefined || !isAlive(daemonPid)) return { wasRunning: false, report: undefined };
  const pm = await ProcessManager.connect(paths.pm2Home);
  let report: ReconcileReport | undefined;
  try {
    const info = readFleetInfo(config);
    const natsUrl = config.nats.url ?? info?.nats_url;
    if (natsUrl && (await pm.describe(Pm2Names.supervisor))?.status === 'online')
      report = await stopAgentsThroughSupervisor(config, natsUrl, step, options.onProgress);
    for (const app of await pm.list()) {
      if (Pm2Names.agentId(app.name)) {
        step(`stopping ${app.name}`);
        await pm.delete(app.name);
      }
    }
    // Kept in the cluster, the agents' keys leave this host with its agents: each the bucket holds.
    if (keysInCluster(config) && natsUrl)
      await withFleetKeys(config, natsUrl, (keys) => keys.keepOnly(config.dataPath, () => false)).catch((err: unknown) =>
        step(`the agents' keys stay on this host: the cluster's key bucket could not be read (${(err as Error).message})`),
      );
    step('stopping the supervisor');
    await pm.delete(Pm2Names.supervisor);
    if (await pm.describe(Pm2Names.nats)) {
      step('stopping nats-server');
      await pm.delete(Pm2Names.nats);
    }
    step('stopping the pm2 daemon');
    await pm.killDaemon();
  } finally {
    pm.disconnect();
  }
  return { wasRunning: true, report };
}

async function waitForPort(port: number, ms: number, log: string, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !signal.aborted) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new ThymosError(ErrorCode.STARTUP_TIMEOUT, `nats-server did not listen on 127.0.0.1:${port} within ${ms} ms (log: ${log})`);
}
