import PQueue from 'p-queue';

/**
 * The fleet's operations (reconciles, single-agent commands, adoption), run one at a time, so
 * one agent never has two transitions in flight and never two processes. An operation's moves
 * up may end before its moves down (see runMoves); `wakesDone` tells the warm pool when no
 * operation is waking agents, so spares boot beside stops but not beside wakes.
 */
export class FleetOperations {
  readonly #queue = new PQueue({ concurrency: 1 });
  #ups: Promise<void> = Promise.resolve();
  #upsDone: () => void = () => undefined;

  /** Runs `work` once the operations before it have ended. */
  run<T>(work: () => Promise<T>): Promise<T> {
    return this.#queue.add(async () => {
      this.#ups = new Promise<void>((resolve) => (this.#upsDone = resolve));
      try {
        return await work();
      } finally {
        this.#upsDone();
      }
    });
  }

  /** Called by the operation running now once it has no move up left. */
  upsDone(): void {
    this.#upsDone();
  }

  /** Settles once no operation runs or waits. */
  idle(): Promise<void> {
    return this.#queue.onIdle();
  }

  /** Settles once no operation is waking agents: none runs or waits, or the one running has only moves down left. */
  async wakesDone(): Promise<void> {
    for (;;) {
      const ups = this.#ups;
      await ups;
      if (this.#queue.size === 0 && ups === this.#ups) return;
      // An operation waits in the queue: its wakes are awaited once it has begun.
      await this.#queue.onSizeLessThan(1);
      if (this.#ups === ups) await this.#queue.onIdle();
    }
  }
}
