import { availableParallelism } from 'node:os';
import { join } from 'node:path';

import pRetry, { AbortError } from 'p-retry';

import { type FleetPaths, Pm2Names, type ThymosConfig } from '../../shared/config/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { AppExit, ProcessManager } from '../pm2/process-manager.js';
import { agentApp } from './agent-app.js';

export interface AgentPoolOptions {
  config: ThymosConfig;
  paths: FleetPaths;
  processes: ProcessManager;
  logger: Logger;
  /** The NATS server spares link to. */
  natsUrl: string;
  /** The bundled `thymos` command spares run. */
  thymosBin: string;
  /** Settles when no operation of the fleet is waking agents: spares boot then, beside stops but never beside a wake. */
  wakesDone: () => Promise<void>;
}

/**
 * Spares booting at once: one per core beyond the first, and at least two. A spare's boot and
 * rehearsal take about 0.8 s of one core, so one at a time refills a pool of 4 in over 3 s: a
 * player walking on every 3 s found it dry and a third of the wakes started cold. Two at a time on
 * 2 cores keep up, for about 50 ms more on a step whose talks share the cores with the refill
 * (docs/waking.md, "Spares booting at once").
 */
const PARALLEL = Math.max(2, availableParallelism() - 1);

/** How the pool has served wakes since the supervisor started. */
export interface PoolStats {
  size: number;
  /** Spares waiting for a claim now. */
  ready: number;
  /** Wakes that took a spare, and wakes that found none and started cold. */
  hits: number;
  misses: number;
  /** Time to start one spare until it said ready, ms, the last one. */
  lastRefillMs: number | null;
}

/**
 * The warm pool (`[supervisor] pool_size`): spare agent processes started under pm2 ahead of
 * need, each waiting for one claim. `take()` hands out a ready spare (or none: the wake starts
 * cold); the pool then refills at once, PARALLEL spares at a time, whenever no wake is
 * running: a spare boots beside the stops of the step that took it and the game's talks, and a
 * wake never waits for a spare's boot (it only takes spares that are ready). A spare that exits while it waits is deleted
 * and replaced; one that cannot start backs off as pm2 would (`restart_delay_ms`, doubling up
 * to 15 s). Spares left by an earlier supervisor are deleted at open and replaced by new ones.
 */
export class AgentPool {
  readonly #o: AgentPoolOptions;
  readonly #ready: string[] = [];
  #starting = 0;
  #next = 1;
  #hits = 0;
  #misses = 0;
  #lastRefillMs: number | null = null;
  #closed = false;
  /** Filling loops running, at most PARALLEL. */
  readonly #filling = new Set<Promise<void>>();
  #unwatch: () => void = () => undefined;

  private constructor(options: AgentPoolOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#o.config.supervisor.pool_size;
  }

  /** Deletes the spares an earlier supervisor left, then starts filling the pool in the background. */
  static async open(options: AgentPoolOptions): Promise<AgentPool> {
    const pool = new AgentPool(options);
    for (const app of await options.processes.list()) {
      const n = Pm2Names.spareNumber(app.name);
      if (n === undefined) continue;
      pool.#next = Math.max(pool.#next, n + 1);
      await options.processes.delete(app.name);
    }
    pool.#unwatch = await options.processes.watchExits((exit) => pool.#onExit(exit));
    pool.fill();
    return pool;
  }

  /** A ready spare's app name, taken out of the pool, or undefined when none is ready. */
  take(): string | undefined {
    if (this.size === 0) return undefined;
    const slot = this.#ready.shift();
    if (slot) this.#hits++;
    else this.#misses++;
    this.fill();
    return slot;
  }

  stats(): PoolStats {
    return { size: this.size, ready: this.#ready.length, hits: this.#hits, misses: this.#misses, lastRefillMs: this.#lastRefillMs };
  }

  /** Starts spares until the pool is full, in the background, PARALLEL at a time; calling it again while it fills adds no more than that. */
  fill(): void {
    const missing = this.size - this.#ready.length - this.#starting;
    while (!this.#closed && this.#filling.size < Math.min(PARALLEL, missing)) {
      const filling = this.#fillLoop().finally(() => this.#filling.delete(filling));
      this.#filling.add(filling);
    }
  }

  /** Stops filling and deletes the spares that wait; claimed ones are agents now and stay. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unwatch();
    await Promise.all([...this.#filling].map((f) => f.catch(() => undefined)));
    for (const slot of this.#ready.splice(0)) await this.#o.processes.delete(slot).catch(() => undefined);
  }

  async #fillLoop(): Promise<void> {
    // A spare that did not start is tried again after restart_delay_ms (at least 100 ms), doubling
    // up to 15 s; anything else (the wait for the wakes, pm2 itself) ends the filling.
    const delay = Math.max(100, this.#o.config.supervisor.restart_delay_ms);
    while (this.#wanting) {
      await pRetry(
        async () => {
          if (!this.#wanting) return;
          try {
            await this.#o.wakesDone();
            // Another filling loop may have started the spare this one waited to start.
            if (this.#closed || !this.#wanting || (await this.#startOne())) return;
          } catch (err) {
            throw new AbortError(err instanceof Error ? err : String(err));
          }
          throw new Error('the spare did not start');
        },
        { retries: Number.POSITIVE_INFINITY, minTimeout: delay, factor: 2, maxTimeout: Math.max(15_000, delay) },
      );
    }
  }

  /** True while the pool is open and short of spares. */
  get #wanting(): boolean {
    return !this.#closed && this.#ready.length + this.#starting < this.size;
  }

  /** Starts one spare and waits for its ready; false (and nothing left running) if it exited instead. */
  async #startOne(): Promise<boolean> {
    const { config, paths, processes, logger } = this.#o;
    const slot = Pm2Names.spare(this.#next++);
    const t0 = performance.now();
    this.#starting++;
    let exited = false;
    const unwatch = await processes.watchExits((e) => {
      if (e.name === slot) exited = true;
    });
    try {
      // A claimed spare is an agent: pm2 restarts it after a crash, as that agent.
      await processes.start(
        agentApp(
          config,
          this.#o.thymosBin,
          slot,
          ['spare', '--slot', slot, '--nats-url', this.#o.natsUrl],
          join(paths.logs, 'pool', `${slot}.log`),
        ),
      );
      if (exited) throw new Error(`${slot} exited while starting (log: ${join(paths.logs, 'pool', `${slot}.log`)})`);
      if (this.#closed) {
        await processes.delete(slot);
        return true;
      }
      this.#ready.push(slot);
      this.#lastRefillMs = Math.round(performance.now() - t0);
      logger.debug({ slot, ms: this.#lastRefillMs }, 'spare ready');
      return true;
    } catch (err) {
      logger.warn({ slot, err: (err as Error).message }, 'a spare did not start; trying again after a back-off');
      await processes.delete(slot).catch(() => undefined);
      return false;
    } finally {
      this.#starting--;
      unwatch();
    }
  }

  /** A waiting spare that exited (killed, crashed) is deleted and replaced, never claimed. */
  #onExit(exit: AppExit): void {
    const at = this.#ready.indexOf(exit.name);
    if (at < 0) return;
    this.#ready.splice(at, 1);
    this.#o.logger.warn({ slot: exit.name, exit_code: exit.exitCode }, 'a waiting spare exited; replacing it');
    void this.#o.processes
      .delete(exit.name)
      .catch(() => undefined)
      .finally(() => this.fill());
  }
}
