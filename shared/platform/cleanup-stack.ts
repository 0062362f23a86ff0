/**
 * What a process set up, to be undone in reverse order when it stops or fails to start.
 * A failing step is skipped so the rest still run.
 */
export class CleanupStack {
  readonly #steps: Array<() => Promise<unknown> | unknown> = [];

  push(step: () => Promise<unknown> | unknown): void {
    this.#steps.push(step);
  }

  /** Runs every step, last pushed first, once. */
  async run(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => undefined);
  }
}
