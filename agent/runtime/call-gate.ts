import { ErrorCode, ThymosError } from '../../shared/errors/index.js';

/**
 * Counts the calls in flight into an agent, so a stop can wait for them (`drain`), and
 * refuses new ones once the agent is stopping.
 */
export class CallGate {
  #inFlight = 0;
  #idle: Array<() => void> = [];

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Runs `fn` as a call in flight; `stopping` refuses it with AGENT_STOPPING naming `id`. */
  async run<T>(id: string, stopping: boolean, fn: () => Promise<T>): Promise<T> {
    if (stopping) throw new ThymosError(ErrorCode.AGENT_STOPPING, `${id} is shutting down and takes no new calls`);
    this.#inFlight++;
    try {
      return await fn();
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) for (const wake of this.#idle.splice(0)) wake();
    }
  }

  /** Resolves once no call is in flight, or after `timeoutMs`, whichever comes first. */
  async drain(timeoutMs: number): Promise<boolean> {
    if (this.#inFlight === 0) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
