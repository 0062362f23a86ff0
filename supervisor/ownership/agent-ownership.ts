/**
 * Which supervisor may move an agent and write its data. A supervisor claims each agent it is given
 * before it moves it; a claim's fencing token travels with what the claim allows (an archive written,
 * an agent started), so a store or an agent can refuse whoever holds an older claim.
 *
 * Claims are safe to repeat: claiming an agent already held returns the token held. A token is never
 * reused: a later claim on the same agent, by this supervisor or another, returns a greater one.
 */
export interface AgentOwnership {
  /** Claims `id` for this supervisor and resolves with the claim's fencing token; rejects with `NOT_OWNER` when another holds it. */
  claim(id: string): Promise<number>;
  /** Keeps the claims this supervisor holds alive; rejects with `NOT_OWNER` naming the agents whose claims were lost. */
  renew(): Promise<void>;
  /** Gives up the claim on `id` (it left the domain); nothing when not held. */
  release(id: string): Promise<void>;
  /**
   * The token of the claim that the one held on `id` took over from this host's earlier run, which an
   * agent that run started still runs under; undefined otherwise (and always where claims do not lapse).
   */
  succeeded(id: string): number | undefined;
  /** The fencing token of the claim held on `id`, or undefined when this supervisor holds none. */
  holds(id: string): number | undefined;
  /** Gives up every claim and what holds them (the supervisor stops). */
  close(): Promise<void>;
  /**
   * When the claims held end unless renewed (ms since the epoch, this host's clock): agents started
   * under them stop themselves a margin before it. Undefined where claims do not lapse (one host).
   */
  readonly deadline: number | undefined;
}

/**
 * Whether a running agent's lease (`get_state`) fits the claims `ownership` holds: where claims lapse,
 * it runs under the claim held on `id` or the one that claim took over; where they do not, under none.
 */
export function runsUnderClaim(
  ownership: AgentOwnership,
  id: string,
  lease: { token: number; fence_at: number } | null | undefined,
): boolean {
  if (ownership.deadline === undefined) return lease == null;
  return lease != null && (lease.token === ownership.holds(id) || lease.token === ownership.succeeded(id));
}
