import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { isAlive, readLockPid } from '../../shared/platform/index.js';

/** One process pm2 runs. */
export interface ProcessInfo {
  name: string;
  pid: number | null;
  /** pm2's status: online, stopping, stopped, launching, errored, one-launch-status. */
  status: string;
  memory: number | null;
  restarts: number;
}

/**
 * Node flags of the fleet's long-lived Node processes (supervisor and agents). Such a process is
 * mostly idle and wakes for one event at a time; by default V8 throws away the bytecode of a
 * function unused over a few garbage collections, and an idle process collects often, so each
 * lone event compiled its handlers again. Keeping the bytecode cut a lone heard event's CPU by
 * about a tenth, at no cost in start time and within the noise in PSS (docs/waking.md).
 */
export const IDLE_PROCESS_NODE_ARGS: readonly string[] = ['--no-flush-bytecode'];

/** What to run under pm2. */
export interface AppSpec {
  name: string;
  script: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Node for JavaScript; `none` for a binary such as nats-server. */
  interpreter?: string;
  /** Flags for Node itself, before the script. */
  nodeArgs?: string[];
  /** Wait for `process.send('ready')` (up to `listenTimeoutMs`). */
  waitReady?: boolean;
  listenTimeoutMs?: number;
  /** SIGINT, then SIGKILL after this long. */
  killTimeoutMs: number;
  /** How often pm2 looks whether a stopped app has exited (its default is 100 ms). */
  killCheckMs?: number;
  /** Leave Node's source-map support off (pm2 turns it on in every app by default). */
  noSourceMaps?: boolean;
  autorestart: boolean;
  /** Exit codes after which pm2 leaves the app stopped rather than restart it. */
  stopExitCodes?: number[];
  /** Exponential back-off base for crash restarts. */
  restartDelayMs?: number;
  /** stdout and stderr both go here. */
  logFile: string;
}

interface Pm2Description {
  name?: string;
  pid?: number;
  monit?: { memory?: number };
  pm2_env?: { status?: string; restart_time?: number };
}

type Callback<T> = (err: Error | null | undefined, value: T) => void;

/** An app's process that exited, as pm2's event bus reports it. */
export interface AppExit {
  name: string;
  /** pm2's status after the exit: `stopped` before a restart, `errored` once it gives up, `stopping` for a stop asked for. */
  status: string;
  restarts: number;
  exitCode: number | null;
  /** When the daemon saw it (epoch ms). */
  at: number;
}

interface BusPacket {
  event?: string;
  at?: number;
  process?: { name?: string; status?: string; restart_time?: number; exit_code?: number };
}

interface Pm2Bus {
  on(event: 'process:event', listener: (packet: BusPacket) => void): void;
}

/** The part of pm2's programmatic API (a `pm2.custom` instance) Thymos uses. */
interface Pm2Api {
  connect(cb: Callback<unknown>): void;
  disconnect(cb?: Callback<unknown>): void;
  start(options: Record<string, unknown>, cb: Callback<unknown>): void;
  list(cb: Callback<Pm2Description[]>): void;
  describe(name: string, cb: Callback<Pm2Description[]>): void;
  delete(name: string, cb: Callback<unknown>): void;
  launchBus(cb: (err: Error | null | undefined, bus: Pm2Bus) => void): void;
}

/**
 * pm2 under one fleet's PM2_HOME. pm2 keeps its paths in module-wide state, so one
 * process works with one PM2_HOME at a time; every Thymos process does.
 */
export class ProcessManager {
  readonly #pm2: Pm2Api;
  readonly home: string;
  #bus: Promise<void> | undefined;
  readonly #exitListeners = new Set<(exit: AppExit) => void>();

  private constructor(pm2: Pm2Api, home: string) {
    this.#pm2 = pm2;
    this.home = home;
  }

  /** Connects to the daemon of `pm2Home`, starting it if it is not running. */
  static async connect(pm2Home: string): Promise<ProcessManager> {
    const mod = (await import('pm2')) as unknown as { default: { custom: new (opts: Record<string, unknown>) => Pm2Api } };
    const pm2 = new mod.default.custom({ pm2_home: pm2Home });
    const manager = new ProcessManager(pm2, pm2Home);
    await manager.#call<unknown>('connect', (cb) => pm2.connect(cb));
    return manager;
  }

  async start(spec: AppSpec): Promise<void> {
    await this.#call('start', (cb) =>
      this.#pm2.start(
        {
          name: spec.name,
          script: spec.script,
          args: spec.args,
          cwd: spec.cwd,
          env: spec.env ?? {},
          interpreter: spec.interpreter ?? process.execPath,
          node_args: spec.nodeArgs ?? [],
          wait_ready: spec.waitReady ?? false,
          listen_timeout: spec.listenTimeoutMs,
          kill_timeout: spec.killTimeoutMs,
          kill_retry_time: spec.killCheckMs,
          disable_source_map_support: spec.noSourceMaps ?? false,
          autorestart: spec.autorestart,
          ...(spec.stopExitCodes ? { stop_exit_codes: spec.stopExitCodes } : {}),
          exp_backoff_restart_delay: spec.restartDelayMs,
          out_file: spec.logFile,
          error_file: spec.logFile,
          merge_logs: true,
          time: false,
          // No @pm2/io inside each app (its metric timers cost an idle agent CPU every second),
          // and no git probe of the script's folder at each start.
          pmx: false,
          automation: false,
          vizion: false,
        },
        cb,
      ),
    );
  }

  async list(): Promise<ProcessInfo[]> {
    const all = await this.#call<Pm2Description[]>('list', (cb) => this.#pm2.list(cb));
    return all.map(toInfo);
  }

  async describe(name: string): Promise<ProcessInfo | undefined> {
    const found = await this.#call<Pm2Description[]>('describe', (cb) => this.#pm2.describe(name, cb));
    return found[0] ? toInfo(found[0]) : undefined;
  }

  /**
   * Calls `listener` each time a process of one of pm2's apps exits (a crash, a stop, a
   * delete) until the returned function is called. pm2's event bus pushes the exits: nothing
   * is polled. Resolves once the bus is connected, so no exit after that is missed.
   */
  async watchExits(listener: (exit: AppExit) => void): Promise<() => void> {
    this.#bus ??= this.#call<Pm2Bus>('launchBus', (cb) => this.#pm2.launchBus(cb)).then((bus) =>
      bus.on('process:event', (packet) => {
        if (packet.event !== 'exit' || !packet.process?.name) return;
        const p = packet.process;
        const exit: AppExit = {
          name: p.name ?? '',
          status: p.status ?? 'unknown',
          restarts: p.restart_time ?? 0,
          exitCode: p.exit_code ?? null,
          at: packet.at ?? Date.now(),
        };
        for (const l of this.#exitListeners) l(exit);
      }),
    );
    await this.#bus;
    this.#exitListeners.add(listener);
    return () => this.#exitListeners.delete(listener);
  }

  /** An app as pm2 sees it once it is no longer `launching` (starting, or restarting after a crash), or as it is after `ms`. */
  async settled(name: string, ms: number): Promise<ProcessInfo | undefined> {
    const deadline = performance.now() + ms;
    let app = await this.describe(name);
    while (app?.status === 'launching' && performance.now() < deadline) {
      await sleep(100);
      app = await this.describe(name);
    }
    return app;
  }

  /**
   * Stops (SIGINT, then SIGKILL after the app's kill timeout) and forgets an app. No-op if
   * unknown. An app pm2 is restarting after a crash can come back after a delete issued
   * while it was launching (seen with pm2 7), so a crash-looping app is deleted only between
   * launches and checked again afterwards.
   */
  async delete(name: string): Promise<void> {
    const deadline = performance.now() + 15_000;
    while (performance.now() < deadline) {
      const app = await this.describe(name);
      if (!app) return;
      const unstable = app.restarts > 0 || app.status !== 'online';
      if (app.status === 'launching') {
        await sleep(50);
        continue;
      }
      await this.#call('delete', (cb) => this.#pm2.delete(name, cb));
      if (!unstable) return;
      await sleep(400);
    }
    throw new ThymosError(ErrorCode.PROCESS_MANAGER_ERROR, `pm2 kept restarting ${name} after it was deleted (PM2_HOME ${this.home})`);
  }

  /**
   * Stops every app, then the daemon itself by its pid (SIGTERM, SIGKILL after `graceMs`),
   * and disconnects. pm2's own killDaemon leaves a reconnecting socket and a timer in the
   * calling process that keep it alive; a game loop that stops its fleet must be able to exit.
   */
  async killDaemon(graceMs = 5000): Promise<void> {
    for (const app of await this.list()) await this.delete(app.name);
    this.disconnect();
    const pid = readLockPid(join(this.home, 'pm2.pid'));
    if (pid === undefined || !isAlive(pid)) return;
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (isAlive(pid) && Date.now() < deadline) await sleep(50);
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  }

  disconnect(): void {
    try {
      this.#pm2.disconnect();
    } catch {
      // Already disconnected.
    }
  }

  #call<T>(what: string, run: (cb: Callback<T>) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      run((err, value) => {
        if (err) {
          const message = err instanceof Error ? err.message : typeof err === 'string' ? err : JSON.stringify(err);
          reject(new ThymosError(ErrorCode.PROCESS_MANAGER_ERROR, `pm2 ${what} (PM2_HOME ${this.home}): ${message}`, { cause: err }));
        } else resolve(value);
      });
    });
  }
}

function toInfo(d: Pm2Description): ProcessInfo {
  const pid = d.pid && d.pid > 0 ? d.pid : null;
  return {
    name: d.name ?? '',
    pid,
    status: d.pm2_env?.status ?? 'unknown',
    memory: pid ? (d.monit?.memory ?? null) : null,
    restarts: d.pm2_env?.restart_time ?? 0,
  };
}
