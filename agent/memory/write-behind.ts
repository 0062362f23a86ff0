/** Least pause before a failed write is tried again. */
const RETRY_MS = 250;

interface Waiting {
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

function waiting(): Waiting {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Whoever waits handles a failure; nobody waiting is not an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/**
 * Writes that may wait a little so that those made close together go as one: `add` queues an
 * item and resolves once a write holding it succeeded. A write starts when the item queued
 * with the earliest deadline (its `delayMs` after it was added) is due, at `maxItems` items,
 * or at `flush`. A write that fails keeps its items first in line and is tried again when they
 * are due but not within RETRY_MS of the failure, or at the next `flush`, which rejects with
 * its error; items are never dropped while the queue is open.
 */
export class WriteBehind<T> {
  readonly #write: (items: T[]) => Promise<void>;
  readonly #maxItems: number;
  readonly #onError: ((err: unknown, items: number) => void) | undefined;
  #items: T[] = [];
  /** Settles when the items now queued are written. */
  #queued: Waiting | undefined;
  /** When the items queued are due to be written (performance.now()): the earliest of their deadlines. */
  #due = 0;
  /** No write is tried again before this, after one failed (performance.now()). */
  #retryAt = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The write in progress: resolves to its error, if it failed. */
  #writing: Promise<unknown> | undefined;
  #inWrite: Waiting | undefined;
  #closed = false;

  constructor(write: (items: T[]) => Promise<void>, options: { maxItems: number; onError?: (err: unknown, items: number) => void }) {
    this.#write = write;
    this.#maxItems = options.maxItems;
    this.#onError = options.onError;
  }

  /** Items queued or being written. */
  get size(): number {
    return this.#items.length + (this.#writing ? 1 : 0);
  }

  /** Queues `item` to be written within `delayMs`; resolves once it is. Throws at once when the queue is closed. */
  add(item: T, delayMs: number): Promise<void> {
    if (this.#closed) throw new Error('the write queue is closed');
    this.#items.push(item);
    const queued = (this.#queued ??= waiting());
    const due = performance.now() + delayMs;
    if (this.#items.length === 1 || due < this.#due) {
      // An item due sooner than those waiting brings their write forward.
      this.#due = due;
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#items.length >= this.#maxItems) void this.flush().catch(() => undefined);
    else this.#schedule();
    return queued.promise;
  }

  /** Resolves once everything queued so far is written (at once when nothing is). */
  async settled(): Promise<void> {
    await Promise.all([this.#inWrite?.promise, this.#queued?.promise]);
  }

  /** Writes everything queued now, after the write in progress; rejects if that write fails. */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#items.length === 0) return;
    const err = await this.#start();
    if (err !== undefined) throw err;
  }

  /** Writes what is queued one last time; if that fails, those waiting get the error. Later `add`s are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    try {
      await this.flush();
    } catch (err) {
      this.#queued?.reject(err);
      this.#items = [];
      this.#queued = undefined;
    }
  }

  #schedule(): void {
    if (this.#timer || this.#writing || this.#closed) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.flush().catch(() => undefined);
      },
      Math.max(0, this.#due - performance.now(), this.#retryAt - performance.now()),
    );
  }

  #start(): Promise<unknown> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const items = this.#items;
    const batch = this.#queued!;
    this.#items = [];
    this.#queued = undefined;
    this.#inWrite = batch;
    const writing = this.#write(items).then(
      () => {
        this.#retryAt = 0;
        batch.resolve();
        return undefined;
      },
      (err: unknown) => {
        // First in line again: the next write holds these items and those queued since, and settles both.
        this.#items = [...items, ...this.#items];
        if (this.#queued) this.#queued.promise.then(batch.resolve, batch.reject);
        else this.#queued = batch;
        this.#retryAt = performance.now() + RETRY_MS;
        this.#onError?.(err, items.length);
        return err;
      },
    );
    this.#writing = writing.finally(() => {
      this.#writing = undefined;
      this.#inWrite = undefined;
      if (this.#items.length > 0) this.#schedule();
    });
    return this.#writing;
  }
}
