import { ErrorCode, ThymosError, WireErrorSchema } from '../../shared/errors/index.js';
import { logOffset, settledLog } from './log-tail.js';
import type { AppExit, AppSpec, ProcessManager } from './process-manager.js';

/** A Thymos process's last word before it exits: `thymos: CODE: message` (see cli/thymos.ts). */
const THYMOS_FAILURE = /^thymos: ([A-Z_]+): (.+)$/;

/** nats-server's fatal or error lines: `[pid] date time [FTL] …`. */
const NATS_FAILURE = /\[(?:FTL|ERR)\] (.+)$/;

/**
 * The apps `thymos up` starts, each watched from the moment it starts until it is ready: an
 * app that exits first fails the start at once with its own last words from its log (the code
 * a Thymos process printed, or nats-server's fatal line) instead of pm2 restarting it until a
 * deadline passes. `undo` stops what was started, in reverse order.
 */
export class AppLaunch {
  readonly #pm: ProcessManager;
  readonly #started: string[] = [];
  readonly #exits = new Map<string, (exit: AppExit) => void>();
  #unwatch: () => void = () => undefined;

  private constructor(pm: ProcessManager) {
    this.#pm = pm;
  }

  static async begin(pm: ProcessManager): Promise<AppLaunch> {
    const launch = new AppLaunch(pm);
    launch.#unwatch = await pm.watchExits((exit) => launch.#exits.get(exit.name)?.(exit));
    return launch;
  }

  /**
   * Starts `spec` and waits for `ready` (given a signal that aborts once the app has exited;
   * `ready` then throws),
   * failing as soon as the app's process exits before that. `what` names it in messages.
   */
  async start(spec: AppSpec, what: string, ready: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const from = logOffset(spec.logFile);
    const since = Date.now();
    const abort = new AbortController();
    const exited = new Promise<never>((_resolve, reject) => {
      this.#exits.set(spec.name, (exit) => {
        // A late report of a copy deleted before this start is not this start's exit.
        if (exit.at < since) return;
        this.#exits.delete(spec.name);
        // The start fails with the app's own words first; only then does the wait for it stop,
        // so that a stopped wait can never pass for a ready app.
        void lastWords(spec.logFile, from, what, exit).then((err) => {
          reject(err);
          abort.abort();
        });
      });
    });
    exited.catch(() => undefined);
    this.#started.push(spec.name);
    try {
      await Promise.race([this.#pm.start(spec).then(() => ready(abort.signal)), exited]);
    } finally {
      this.#exits.delete(spec.name);
      abort.abort();
    }
  }

  /** Stops every app this launch started, last first; a failure to stop one does not stop the rest. */
  async undo(): Promise<void> {
    this.#unwatch();
    for (const name of this.#started.reverse()) await this.#pm.delete(name).catch(() => undefined);
  }

  end(): void {
    this.#unwatch();
  }
}

/** The error an app that exited while starting leaves: its own code and words when its log has them. */
async function lastWords(logFile: string, from: number, what: string, exit: AppExit): Promise<ThymosError> {
  const lines = (await settledLog(logFile, from))
    .split('\n')
    .map((l) => l.trimEnd())
    .filter(Boolean);
  const thymos = lines.map((l) => THYMOS_FAILURE.exec(l)).findLast((m) => m !== null);
  if (thymos) {
    const known = WireErrorSchema.shape.code.safeParse(thymos[1]);
    const code = known.success ? known.data : ErrorCode.PROCESS_MANAGER_ERROR;
    return new ThymosError(code, `${what} exited as it started: ${thymos[2]} (log: ${logFile})`);
  }
  const nats = lines.map((l) => NATS_FAILURE.exec(l)).findLast((m) => m !== null);
  if (nats) {
    const code = /address already in use/i.test(nats[1]!) ? ErrorCode.PORT_IN_USE : ErrorCode.PROCESS_MANAGER_ERROR;
    return new ThymosError(code, `${what} exited as it started: ${nats[1]} (log: ${logFile})`);
  }
  const tail = lines.slice(-3).join(' | ') || 'nothing in its log';
  return new ThymosError(
    ErrorCode.PROCESS_MANAGER_ERROR,
    `${what} exited as it started (exit code ${exit.exitCode ?? 'unknown'}): ${tail} (log: ${logFile})`,
  );
}
