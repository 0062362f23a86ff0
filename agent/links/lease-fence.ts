import type { NatsConnection } from '@nats-io/transport-node';

import { ErrorCode, ExitCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import { LeaseExtensionSchema } from '../../shared/protocol/index.js';

/**
 * An agent's side of placement by lease (`[cluster] enabled`): it was started under a claim
 * (`token`) and stops itself at `fenceAt` (ms since the epoch, this host's clock) unless its
 * supervisor extends the lease first (`<fleet>.agent.<id>.lease`). A supervisor paused or cut off
 * cannot stop its agents; this is how they stop before another host may claim them.
 *
 * Stopping is `process.exit(ExitCode.FENCED)`, at once and from wherever the fence is found passed:
 * the timer, an MCP request (`check` before it is handled), or a NATS message in or out (`guard`).
 * After a pause (SIGSTOP, a frozen VM) the process runs what was waiting (sockets first, timers
 * after), so every way in and out checks the time itself: nothing is answered or written after the
 * fence. The private database needs no stop: it survives a process killed at any point, and what
 * the agent had not acknowledged is delivered again to its next start.
 */
export class LeaseFence {
  #token: number;
  readonly #logger: Logger;
  /** The longest a lease lasts (`[cluster] lease_ms`): no extension moves the fence further than this from now. */
  readonly #leaseMs: number;
  #fenceAt: number;
  #timer: NodeJS.Timeout | undefined;

  private constructor(token: number, fenceAt: number, leaseMs: number, logger: Logger) {
    this.#token = token;
    this.#fenceAt = fenceAt;
    this.#leaseMs = leaseMs;
    this.#logger = logger;
  }

  /**
   * The fence of a start context that has one (`fenceAt`, with `ownershipToken`), armed; undefined
   * without. A fence already past is LEASE_ENDED: the agent does not start.
   */
  static arm(
    context: { ownershipToken?: number | undefined; fenceAt?: number | undefined } | undefined,
    leaseMs: number,
    logger: Logger,
  ): LeaseFence | undefined {
    if (context?.fenceAt === undefined || context.ownershipToken === undefined) return undefined;
    const late = Date.now() - context.fenceAt;
    if (late >= 0)
      throw new ThymosError(
        ErrorCode.LEASE_ENDED,
        `the lease this agent was started under (token ${context.ownershipToken}) ended ${late} ms ago: only its supervisor starts it again, under a new claim`,
      );
    const fence = new LeaseFence(context.ownershipToken, Math.min(context.fenceAt, Date.now() + leaseMs), leaseMs, logger);
    fence.#arm();
    fence.#guardFetch();
    return fence;
  }

  /** The claim the agent runs under now: the one it was started under, or the one that took it over on its host. */
  get token(): number {
    return this.#token;
  }

  /** When the agent stops itself unless extended (ms since the epoch). */
  get fenceAt(): number {
    return this.#fenceAt;
  }

  /** Stops the process now if the fence has passed. */
  check(): void {
    if (Date.now() >= this.#fenceAt) this.#fence();
  }

  /**
   * Takes a lease extension (`LeaseExtension`, raw from NATS): a later `fence_at` for this agent's
   * claim moves the fence, and one for the claim that took this one over (`previous`) moves it too
   * and makes that claim this agent's; one for another claim, an earlier time or a malformed message
   * changes nothing. A message that arrives after the fence does not revive it: `check` runs first.
   */
  extend(raw: unknown): void {
    this.check();
    const parsed = LeaseExtensionSchema.safeParse(raw);
    if (!parsed.success) return void this.#logger.warn({ raw }, 'lease extension ignored: not {token, fence_at}');
    const { token, previous, fence_at: fenceAt } = parsed.data;
    const mine = token === this.#token || (previous !== undefined && previous === this.#token && token > previous);
    // A fence further off than a whole lease is no supervisor's: refused, as a forged one would be.
    if (!mine || fenceAt <= this.#fenceAt || fenceAt > Date.now() + this.#leaseMs) return;
    if (token !== this.#token) this.#logger.info({ token, previous }, 'lease taken over by a new claim of this host; running under it');
    this.#token = token;
    this.#fenceAt = fenceAt;
    this.#arm();
  }

  /**
   * Makes every message `nc` takes in or sends out check the fence first, so that after the fence
   * the agent neither acts on a message nor publishes, acknowledges or requests anything. It hooks
   * the connection's protocol handler, which every message of nats.js goes through both ways: as it
   * is read (`processMsg`), as it is queued (`publish`), and as what was queued is written to the
   * socket (`flushPending`, which also writes what a reconnect had kept), so that a message queued
   * before the fence is not sent after it. What the kernel had already been handed may still leave.
   */
  guard(nc: NatsConnection): void {
    const protocol = (nc as unknown as { protocol?: Partial<Record<(typeof GUARDED)[number], unknown>> }).protocol;
    if (!protocol || GUARDED.some((name) => typeof protocol[name] !== 'function'))
      throw new ThymosError(ErrorCode.INTERNAL, 'the NATS connection has no protocol handler to fence: nats.js changed its internals');
    for (const name of GUARDED) {
      const original = (protocol[name] as (...args: unknown[]) => unknown).bind(protocol);
      protocol[name] = (...args: unknown[]) => {
        this.check();
        return original(...args);
      };
    }
  }

  /**
   * Every HTTP request the process makes with `fetch` (a model's, an Http or Mcp tool's) checks the
   * fence first: after it, a response that arrives does not lead to another request.
   */
  #guardFetch(): void {
    const original = globalThis.fetch;
    globalThis.fetch = (...args: Parameters<typeof fetch>) => {
      this.check();
      return original(...args);
    };
  }

  #arm(): void {
    clearTimeout(this.#timer);
    // It stays armed through a graceful stop, which the fence cuts short if it runs past; it keeps no stopped process alive.
    this.#timer = setTimeout(() => this.check(), Math.max(0, this.#fenceAt - Date.now()));
    this.#timer.unref();
  }

  #fence(): never {
    this.#logger.error({ token: this.#token, fence_at: new Date(this.#fenceAt).toISOString() }, 'lease ended: the agent stops itself');
    this.#logger.flush();
    process.exit(ExitCode.FENCED);
  }
}

/** The methods of nats.js's protocol handler every message goes through, in and out. */
const GUARDED = ['processMsg', 'publish', 'flushPending'] as const;
