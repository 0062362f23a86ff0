import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';

/**
 * What decides how nats-server can be installed here. Read from the running system by
 * `hostFacts()`; a test or a caller may pass its own.
 */
export interface HostFacts {
  platform: NodeJS.Platform;
  /** The process runs as root (uid 0), so it may install a system package. */
  root: boolean;
  /** Debian's package manager is there (`/usr/bin/apt-get`). */
  apt: boolean;
  /** Directories searched for the binary, in order. */
  dirs: readonly string[];
}

/**
 * The system as this process sees it. Debian's package puts the binary in /usr/sbin, which a
 * plain user's PATH often lacks, so /usr/sbin is searched after PATH.
 */
export function hostFacts(env: NodeJS.ProcessEnv = process.env): HostFacts {
  const path = (env.PATH ?? '').split(delimiter).filter(Boolean);
  return {
    platform: process.platform,
    root: process.getuid?.() === 0,
    apt: existsSync('/usr/bin/apt-get'),
    dirs: [...path, ...(path.includes('/usr/sbin') ? [] : ['/usr/sbin'])],
  };
}

/** The exact command that installs nats-server on this host, or undefined where none is known. */
export function natsServerInstallCommand(host: HostFacts): string | undefined {
  if (host.platform === 'darwin') return 'brew install nats-server';
  if (host.platform === 'linux' && host.apt) return host.root ? 'apt-get install nats-server' : 'sudo apt-get install nats-server';
  return undefined;
}

/** The nats-server binary (an executable file, by its absolute path) in the host's directories, or undefined. */
export function locateNatsServer(host: HostFacts = hostFacts()): string | undefined {
  for (const dir of host.dirs) {
    // Relative entries (`.`) are skipped, as Go's exec.LookPath does: a nats-server in whatever
    // folder the command runs from is not the one to run.
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, 'nats-server');
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** NATS_SERVER_MISSING, one line naming the command to run on this host and the other way out. */
function missing(host: HostFacts, why = 'nats-server is not installed'): ThymosError {
  const command = natsServerInstallCommand(host);
  const install = command ? `run \`${command}\`` : 'install nats-server (https://github.com/nats-io/nats-server/releases) on your PATH';
  return new ThymosError(ErrorCode.NATS_SERVER_MISSING, `${why}; ${install}, or set [nats] url in thymos.toml to a NATS server you run`, {
    details: { install_command: command ?? null, searched: host.dirs },
  });
}

/**
 * The nats-server binary `thymos up` runs when `[nats] url` is unset. Missing, it is
 * NATS_SERVER_MISSING: one line naming the command that installs it here
 * (`sudo apt-get install nats-server`, `brew install nats-server`) or `[nats] url`.
 */
export function findNatsServer(host: HostFacts = hostFacts()): string {
  const found = locateNatsServer(host);
  if (found === undefined) throw missing(host);
  return found;
}

export interface EnsureNatsServerOptions {
  /** Called with each line to show: what is installed, before it is. @default a line on stderr */
  onStep?: (line: string) => void;
  host?: HostFacts;
}

export interface EnsuredNatsServer {
  path: string;
  /** True when this call installed it. */
  installed: boolean;
}

/**
 * Finds nats-server, installing Debian's package first when it is missing and this process
 * may install it (Linux, apt, root). It says what it installs, and what the package brings,
 * before it does; it installs nothing when the binary is there, so a second run only finds
 * it. Where it cannot install (not root, no apt, macOS) it installs nothing and fails with
 * NATS_SERVER_MISSING naming the command to run. A failed apt-get is NATS_SERVER_MISSING with
 * apt-get's own last line; apt-get and dpkg leave the package either installed or not (an
 * interrupted dpkg asks for `dpkg --configure -a`, as apt-get then says).
 */
export async function ensureNatsServer(options: EnsureNatsServerOptions = {}): Promise<EnsuredNatsServer> {
  const host = options.host ?? hostFacts();
  const found = locateNatsServer(host);
  if (found !== undefined) return { path: found, installed: false };
  if (!(host.platform === 'linux' && host.apt && host.root)) throw missing(host);
  const step = options.onStep ?? ((line: string) => void process.stderr.write(`${line}\n`));
  step(
    "nats-server is not installed: installing Debian's package (apt-get update; apt-get install -y --no-install-recommends nats-server). " +
      "The package also adds a system user 'nats' and a nats-server.service that systemd starts on 127.0.0.1:4222; Thymos runs its own nats-server under pm2 and does not use it (systemctl disable --now nats-server stops it)",
  );
  await aptGet(['update', '-qq'], host);
  await aptGet(['install', '-y', '-qq', '--no-install-recommends', 'nats-server'], host);
  const path = locateNatsServer(host);
  if (path === undefined)
    throw missing(host, 'apt-get installed the nats-server package but no nats-server binary is in the searched directories');
  step(`installed ${path}`);
  return { path, installed: true };
}

/**
 * Runs apt-get as root with an environment of its own: the caller's PATH (npm puts every
 * node_modules/.bin first) must not choose what the package's scripts run, nor APT_CONFIG,
 * LD_PRELOAD or DPKG_* change what gets installed.
 */
function aptGet(args: string[], host: HostFacts): Promise<void> {
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' };
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/apt-get', args, { env, maxBuffer: 16 * 1024 * 1024 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      const what = `apt-get ${args.filter((a) => !a.startsWith('-')).join(' ')}`;
      const last = stderr.trim().split('\n').filter(Boolean).at(-1);
      const how = err.signal ? `was stopped by ${err.signal}` : `failed${typeof err.code === 'number' ? ` (exit ${err.code})` : ''}`;
      reject(missing(host, `${what} ${how}${last ? `: ${last}` : ''}`));
    });
  });
}

/** The version `nats-server --version` prints (`v2.9.10`), or undefined when it cannot run or says none. */
export function natsServerVersion(path: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(path, ['--version'], { timeout: 5000 }, (err, stdout) => resolve(err ? undefined : /v\d+\.\d+\.\d+\S*/.exec(stdout)?.[0]));
  });
}
