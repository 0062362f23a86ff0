import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { type Authenticator, nkeyAuthenticator } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../client/fleet-client.js';
import { loadConfig } from '../../shared/config/thymos-config.js';
import { readNatsSeed } from '../../shared/nats/nats-identity.js';
import { isAlive } from '../../shared/platform/data-lock.js';
import { downFleet, upFleet } from '../../supervisor/launch/fleet-launcher.js';
import { createWorkspace, THYMOS_BIN, type Workspace } from './workspace.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the compiled `thymos` command in `cwd`. */
export function runThymos(args: string[], cwd: string, stdin?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [THYMOS_BIN, ...args], { cwd, stdio: ['pipe', 'pipe', 'pipe'], env: withoutConfigEnv() });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

/**
 * Pids of everything a fleet's pm2 runs: the daemon, then each app by the name pm2
 * gives its pid file (underscores become hyphens: `agent-elder-rowan`).
 */
export function fleetPids(dataDir: string): { daemon: number | undefined; apps: Map<string, number> } {
  const home = join(dataDir, 'pm2');
  const read = (f: string) => {
    try {
      const n = Number.parseInt(readFileSync(f, 'utf8').trim(), 10);
      return Number.isInteger(n) && n > 0 ? n : undefined;
    } catch {
      return undefined;
    }
  };
  const apps = new Map<string, number>();
  const pidsDir = join(home, 'pids');
  if (existsSync(pidsDir)) {
    for (const f of readdirSync(pidsDir)) {
      const pid = read(join(pidsDir, f));
      if (pid) apps.set(f.replace(/-\d+\.pid$/, ''), pid);
    }
  }
  return { daemon: read(join(home, 'pm2.pid')), apps };
}

/** Running, not a zombie (containers whose init does not reap leave those behind). */
export const alive = isAlive;

/**
 * Connect options for a raw NATS connection to the fleet whose data directory is `dataDir`, as
 * its supervisor: the one identity that may do everything on the managed nats-server, for tests
 * and benches that look into JetStream's streams or publish as a party by hand (the client may not).
 */
export function asFleetSupervisor(dataDir: string): { authenticator?: Authenticator } {
  const seed = readNatsSeed(dataDir, 'supervisor');
  return seed ? { authenticator: nkeyAuthenticator(seed) } : {};
}

/**
 * Tears down a fleet a test ran on a nats-server it started itself: the client, the fleet
 * (`thymos down`, then what is left by pid), the server, the workspace. Each step runs whatever
 * the one before did.
 */
export async function disposeOwnServerFleet(
  ws: Workspace,
  fleet: Fleet | undefined,
  nats: { stop(): Promise<void> } | undefined,
): Promise<void> {
  await fleet?.close().catch(() => undefined);
  await downFleet(loadConfig(ws.configPath)).catch(() => undefined);
  await killFleet(join(ws.dir, 'data'));
  await nats?.stop();
  ws.dispose();
}

/**
 * Kills a fleet by pid, whatever state a test left it in: the pm2 daemon first (so it
 * restarts nothing), then every app it ran and any agent still holding its lock.
 */
export async function killFleet(dataDir: string): Promise<void> {
  const { daemon, apps } = fleetPids(dataDir);
  const pids = [daemon, ...apps.values()].filter((p): p is number => p !== undefined);
  const agentsDir = join(dataDir, 'agents');
  if (existsSync(agentsDir)) {
    for (const id of readdirSync(agentsDir)) {
      const lock = join(agentsDir, id, 'agent.pid');
      if (existsSync(lock)) {
        const pid = Number.parseInt(readFileSync(lock, 'utf8'), 10);
        if (pid > 0) pids.push(pid);
      }
    }
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (let i = 0; i < 50 && pids.some(alive); i++) await sleep(100);
}

/** Polls `check` until it returns a value (not undefined) or the deadline passes. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, ms = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
      last = undefined; // answered, not yet as wanted: an older error no longer explains the wait
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(200);
  }
}

/** This process's environment without THYMOS_CONFIG, so the command finds ./thymos.toml. */
function withoutConfigEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.THYMOS_CONFIG;
  return env;
}

/** A fleet started for a test: `thymos up` on a workspace, with a connected client. */
export interface TestFleet {
  readonly ws: Workspace;
  readonly fleet: Fleet;
  /** Closes the client, brings the fleet down, kills what is left by pid, removes the workspace. */
  dispose(): Promise<void>;
}

/** What the managed nats-server of the fleet in `dataDir` refused to let one of its users do (its log's permission violations). */
export function natsViolations(dataDir: string): string[] {
  const log = join(dataDir, 'logs', 'nats-server.log');
  return existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.includes(' Violation'))
    : [];
}

/**
 * Starts a fleet on a fresh workspace with `extra` TOML (see `createWorkspace`), on the village's
 * domain or `schema`. Disposing it fails when nats-server refused one of the fleet's own processes
 * something (a permission the fleet's users lack), unless `refusals` says the test provokes them.
 */
export async function startTestFleet(
  extra: string[],
  options: { schema?: string; agent?: string[]; refusals?: 'expected' } = {},
): Promise<TestFleet> {
  const ws = createWorkspace({
    extra: extra.join('\n'),
    ...(options.schema ? { schema: options.schema } : {}),
    ...(options.agent ? { agent: options.agent } : {}),
  });
  const config = loadConfig(ws.configPath);
  let fleet: Fleet | undefined;
  const dispose = async () => {
    await fleet?.close().catch(() => undefined);
    await downFleet(loadConfig(ws.configPath)).catch(() => undefined);
    await killFleet(join(ws.dir, 'data'));
    const refused = options.refusals === 'expected' ? [] : natsViolations(join(ws.dir, 'data'));
    ws.dispose();
    if (refused.length > 0)
      throw new Error(`nats-server refused the fleet's own processes ${refused.length} time(s):\n${refused.slice(0, 10).join('\n')}`);
  };
  try {
    await upFleet(config);
    fleet = await connect(config);
  } catch (err) {
    await dispose();
    throw err;
  }
  return { ws, fleet, dispose };
}

/** A test fleet started before the tests of the enclosing `describe` and disposed after them; the returned function gives it inside a test. */
export function suiteFleet(extra: string[]): () => TestFleet {
  let tf: TestFleet | undefined;
  before(async () => {
    tf = await startTestFleet(extra);
  });
  after(async () => {
    await tf?.dispose();
  });
  return () => tf!;
}
