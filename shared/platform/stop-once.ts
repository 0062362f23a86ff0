/**
 * A process's stop, run once whoever asks first (a signal, a NATS request, `thymos down`):
 * every caller gets the same promise, and `stopped` settles with it.
 */
export class StopOnce {
  readonly #run: (reason: string) => Promise<void>;
  #settle!: (result: Promise<void>) => void;
  #asked = false;
  /** Settles when the stop has run, whoever asked for it. */
  readonly stopped: Promise<void>;

  constructor(run: (reason: string) => Promise<void>) {
    this.#run = run;
    this.stopped = new Promise<void>((resolve) => (this.#settle = resolve));
  }

  /** Whether a stop was asked for. */
  get asked(): boolean {
    return this.#asked;
  }

  /** Runs the stop the first time; later calls get the same promise. */
  stop(reason: string): Promise<void> {
    if (!this.#asked) {
      this.#asked = true;
      this.#settle(this.#run(reason));
    }
    return this.stopped;
  }
}
