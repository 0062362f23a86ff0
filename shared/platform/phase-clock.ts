/**
 * Times the phases of a start, each from the end of the one before: `mark('db_open')`
 * records how long opening the database took. `phases` is what start-up logs carry.
 */
export class PhaseClock {
  readonly #started = performance.now();
  #last = this.#started;
  readonly phases: Record<string, number> = {};

  mark(name: string): void {
    const now = performance.now();
    this.phases[name] = Math.round(now - this.#last);
    this.#last = now;
  }

  /** Milliseconds since the clock was made. */
  elapsed(): number {
    return Math.round(performance.now() - this.#started);
  }
}

/** CPU this process has used since it began (user and system, every thread), in ms: what its trace logs carry as `cpu_ms`. */
export function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 1000);
}
