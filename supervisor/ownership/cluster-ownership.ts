import { jetstream } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

import type { StreamReplicas } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { lostRace, updateStream } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { AgentOwnership } from './agent-ownership.js';
import {
  agentKey,
  CLAIM_TRIES,
  hostKey,
  type HostLease,
  hostLease,
  HostLeaseSchema,
  json,
  leaseExpired,
  type LeaseOptions,
  OPEN_WITHIN_MS,
  type Placement,
  PlacementSchema,
  readEntry,
  releaseHostPlacements,
  takeLease,
  throughTimeouts,
} from './placement-bucket.js';
import { PlacementView } from './placement-view.js';

/** The key of the fleet's coordinator role in the placement bucket. */
const COORDINATOR_KEY = 'coordinator';

export interface ClusterOwnershipOptions extends LeaseOptions {
  nc: NatsConnection;
  /** Replicas of the placement bucket (1, or 3 on a three-node cluster). */
  replicas: StreamReplicas;
  /**
   * How long before the lease ends its agents stop themselves (`[cluster] fence_margin_ms`): a
   * renewal sent after that counts as late, since the agents it would extend have stopped.
   * @default 0
   */
  fenceMarginMs?: number | undefined;
}

/**
 * Ownership on a NATS cluster: which host holds which agent lives in the fleet's JetStream KV bucket
 * (`<FLEET>_PLACEMENT`), and every write there is a compare-and-set on the revision read, so of two
 * hosts that race for an agent one wins and the other learns it lost.
 *
 * - **A host's lease** is its key `host.<name>`, renewed by compare-and-set on its own last revision.
 *   It lasts `leaseMs` after the server stored the last renewal. Whether it has expired is judged on
 *   the server's clock alone: the time the server stamped on that renewal against the time it stamps
 *   on a write the judge makes now (`clock.<judge>`), never one host's clock against another's.
 * - **A placement** is the key `agent.<id>`, naming the host and the run of it that claimed it. Its
 *   revision is the claim's fencing token: revisions only grow, so a later claim has a greater one.
 * - **Taking an agent over** from a host whose lease expired first marks that lease expired (a
 *   compare-and-set at the revision judged), so that host's next renewal fails: it learns it lost
 *   every agent rather than renewing as if nothing happened.
 * - **The holder** counts its lease from when it sent the renewal, on its own clock: it ends no later
 *   than anyone else may judge it ended (`deadline`), and a renewal sent after that fails too.
 *
 * Safe to repeat: claiming an agent held returns the token held; a renewal or release that lost a
 * race changes nothing of another host's.
 */
export class ClusterOwnership implements AgentOwnership {
  readonly #o: ClusterOwnershipOptions;
  readonly #kv: KV;
  /** This start of the host's supervisor: a new one at every start, and after a lease is lost. */
  #run: string;
  readonly #held = new Map<string, number>();
  /** For an agent claimed over an earlier run of this host: that run's token, which an agent it started still runs under. */
  readonly #succeeded = new Map<string, number>();
  /** The revision of this host's last write of its lease key. */
  #hostRevision: number;
  /** When (wall clock, ms) the lease this host last renewed ends, counted from when the renewal was sent. */
  #deadline: number;
  /** `held`: the lease is live; `lost`: another host ended it or a renewal came too late (the next claim or renewal takes it again); `closed`. */
  #state: 'held' | 'lost' | 'closed' = 'held';
  /** A rejoin under way, which a claim and a renewal share. */
  #rejoining: Promise<void> | undefined;
  /** The token of the coordinator role, once this host took it (under its current run). */
  #coordinating: number | undefined;
  /** Whether this host took the coordinator role once: it then claims agents only while it holds it. */
  #coordinated = false;

  private constructor(options: ClusterOwnershipOptions, kv: KV, run: string, revision: number, sentAt: number) {
    this.#o = options;
    this.#kv = kv;
    this.#run = run;
    this.#hostRevision = revision;
    this.#deadline = sentAt + options.leaseMs;
  }

  /**
   * Opens the fleet's placement bucket (made with `replicas` when missing) and takes this host's
   * lease. A live lease under the same `[host] name`, another supervisor's, is refused
   * (`SUPERVISOR_ALREADY_RUNNING`, naming its pid); an expired one is taken over.
   */
  static async open(options: ClusterOwnershipOptions): Promise<ClusterOwnership> {
    return await throughTimeouts(OPEN_WITHIN_MS, `${options.names.placementBucket} to answer`, () => ClusterOwnership.#open(options));
  }

  static async #open(options: ClusterOwnershipOptions): Promise<ClusterOwnership> {
    // Reads go to the stream's leader, not a replica (direct get): a lease is judged on the latest write, and on
    // nats-server 2.9 a replica that has not caught up with a new bucket leaves a direct get unanswered.
    // A request that goes unanswered (a node lost, a leader being elected) fails well within the lease, so a renewal is tried again in time.
    const js = jetstream(options.nc, { timeout: Math.max(250, Math.floor(options.leaseMs / 5)) });
    const kv = await new Kvm(js).create(options.names.placementBucket, {
      replicas: options.replicas,
      history: 1,
      allow_direct: false,
    });
    // A bucket made before on another number of nodes is brought to `replicas`, as the fleet's streams are, and waited for.
    const stream = `KV_${options.names.placementBucket}`;
    const jsm = await js.jetstreamManager();
    const was = (await jsm.streams.info(stream)).config;
    if (was.num_replicas !== options.replicas) await updateStream(jsm, stream, was, options.replicas);
    const { run, revision, sentAt } = await takeLease(kv, options);
    return new ClusterOwnership(options, kv, run, revision, sentAt);
  }

  /** When (ms since the epoch, this host's clock) the lease last renewed ends: agents stop before it. */
  get deadline(): number {
    return this.#deadline;
  }

  async claim(id: string): Promise<number> {
    const held = this.#held.get(id);
    if (held !== undefined) return held;
    // Once this host has coordinated, it claims agents only while it holds the role: after losing it, the role is taken again first.
    if (this.#coordinated && this.coordinating === undefined)
      throw new ThymosError(ErrorCode.NOT_OWNER, `host ${this.#o.host} does not hold the coordinator role now: it claims no agent`, {
        details: { agent: id, host: this.#o.host },
      });
    const { revision, earlier } = await this.#take(agentKey(id), id);
    // Taken from this host's earlier run at the revision it claimed at: nobody held it in between.
    if (earlier !== undefined) this.#succeeded.set(id, earlier);
    this.#held.set(id, revision);
    return revision;
  }

  /**
   * Takes the fleet's coordinator role (the key `coordinator`) as a claim takes an agent: refused
   * (NOT_OWNER, naming the host) while a host whose lease is live holds it, taken once that lease
   * ended. Held as long as this host's lease: a lost lease loses it too. Its token.
   */
  async coordinate(): Promise<number> {
    if (this.#coordinating !== undefined && this.#state === 'held') return this.#coordinating;
    this.#coordinating = (await this.#take(COORDINATOR_KEY, 'the coordinator role')).revision;
    this.#coordinated = true;
    return this.#coordinating;
  }

  /** Gives up the coordinator role and every placement of this host's runs, whose agents have stopped or passed their fence: no host need wait for this one's lease. */
  async resign(): Promise<string[]> {
    this.#coordinating = undefined;
    this.#held.clear();
    this.#succeeded.clear();
    return await releaseHostPlacements(this.#kv, this.#o.host);
  }

  /** The token of the coordinator role while this host holds it and its lease. */ get coordinating(): number | undefined {
    return this.#state === 'held' ? this.#coordinating : undefined;
  }

  /**
   * Writes this run's placement at `key` by compare-and-set, once the host that held it has no live
   * lease (`what` names it in a refusal). Its revision, and the revision this host's earlier run held
   * it at when taken straight from that run.
   */
  async #take(key: string, what: string): Promise<{ revision: number; earlier?: number }> {
    if (this.#state === 'closed')
      throw new ThymosError(ErrorCode.NOT_OWNER, `host ${this.#o.host} has given up its lease: it claims nothing`);
    if (this.#state === 'lost') await this.#rejoin();
    const mine: Placement = { host: this.#o.host, run: this.#run };
    const stillMine = () => this.#state === 'held' && this.#run === mine.run;
    for (let tries = 0; ; tries++) {
      const entry = await this.#kv.get(key);
      try {
        let revision: number;
        let earlier: number | undefined;
        if (!entry || entry.operation !== 'PUT') {
          revision = entry ? await this.#kv.update(key, json(mine), entry.revision) : await this.#kv.create(key, json(mine));
        } else {
          const placed = readEntry(entry, PlacementSchema);
          // Placed by this run already: a write whose answer timed out was stored after all.
          if (placed.host === mine.host && placed.run === mine.run) revision = entry.revision;
          else {
            await this.#endLeaseOf(what, placed);
            revision = await this.#kv.update(key, json(mine), entry.revision);
            if (placed.host === mine.host && stillMine()) earlier = entry.revision;
          }
        }
        // The lease was lost while the claim was on its way: the placement names a run that is over, which this host claims again under its next.
        if (!stillMine())
          throw new ThymosError(ErrorCode.NOT_OWNER, `host ${this.#o.host} lost its lease while claiming ${what}: claim it again`, {
            details: { agent: what, host: this.#o.host },
          });
        return earlier === undefined ? { revision } : { revision, earlier };
      } catch (err) {
        if (!lostRace(err) || tries >= CLAIM_TRIES) throw err;
      }
    }
  }

  /**
   * Makes sure the host that placed agent `id` holds no live lease: this host's earlier run is over
   * (this one holds the lease now); another host's live lease, whichever of its runs placed the agent,
   * is NOT_OWNER (that host claims its own again, and an earlier run's agents may still run until their
   * fence); one that ended is marked so first, so that host's next renewal fails.
   */
  async #endLeaseOf(id: string, placed: Placement): Promise<void> {
    if (placed.host === this.#o.host) return;
    const entry = await this.#kv.get(hostKey(placed.host));
    if (!entry || entry.operation !== 'PUT') return;
    const lease = readEntry(entry, HostLeaseSchema);
    if (lease.expired_by) return;
    if (!(await leaseExpired(this.#kv, entry, this.#o, this.#o.host)))
      throw new ThymosError(ErrorCode.NOT_OWNER, `${id} is held by host ${placed.host}, whose lease is live`, {
        details: { agent: id, host: placed.host },
      });
    await this.#kv.update(hostKey(placed.host), json({ ...lease, expired_by: this.#o.host }), entry.revision);
  }

  /**
   * Renews this host's lease (compare-and-set on its last revision). Rejects with NOT_OWNER naming
   * every agent held when the lease is gone: another host marked it expired, or this renewal was sent
   * after the deadline (the host was paused). The claims are dropped then; the next `claim` takes a
   * new lease under a new run first.
   */
  async renew(): Promise<void> {
    if (this.#state === 'closed') return;
    if (this.#state === 'lost') return void (await this.#rejoin());
    const sentAt = Date.now();
    // Sent after the deadline (the host was paused), a renewal is not sent: its agents stopped themselves, and another host may judge the lease over.
    const late = sentAt >= this.#deadline - (this.#o.fenceMarginMs ?? 0);
    let revision: number | undefined;
    if (!late) revision = await this.#renewAt(this.#hostRevision, true);
    if (revision !== undefined) {
      this.#hostRevision = revision;
      this.#deadline = sentAt + this.#o.leaseMs;
      return;
    }
    const lostAgents = [...this.#held.keys()];
    const coordinator = this.#coordinating !== undefined;
    this.#held.clear();
    this.#succeeded.clear();
    this.#coordinating = undefined;
    this.#state = 'lost';
    throw new ThymosError(
      ErrorCode.NOT_OWNER,
      `host ${this.#o.host} ${late ? (sentAt >= this.#deadline ? 'renewed after its lease had ended' : "renewed after its agents' fence had passed") : 'found its lease ended by another host'}: it no longer holds ${lostAgents.length > 0 ? lostAgents.join(', ') : 'any agent'}`,
      { details: { host: this.#o.host, agents: lostAgents, coordinator } },
    );
  }

  /**
   * Writes this host's lease at `revision`: its new revision, or undefined when another write came
   * first. Stored, it proves no other host marked the lease expired first, however long the answer
   * took. A renewal whose answer timed out may have been stored all the same: when the key holds this
   * run's lease unmarked, the write is made again at that revision (`again`).
   */
  async #renewAt(revision: number, again: boolean): Promise<number | undefined> {
    try {
      return await this.#kv.update(hostKey(this.#o.host), json(this.#lease()), revision);
    } catch (err) {
      if (!lostRace(err)) throw err;
    }
    if (!again) return undefined;
    const entry = await this.#kv.get(hostKey(this.#o.host));
    const lease = entry?.operation === 'PUT' ? readEntry(entry, HostLeaseSchema) : undefined;
    return lease?.run === this.#run && !lease.expired_by ? this.#renewAt(entry!.revision, false) : undefined;
  }

  /**
   * Renews every `everyMs` (well under the lease: `[cluster] renew_ms`) until stopped or closed:
   * `renewed` after each renewal that held, `failed` with each that did not (NOT_OWNER naming the
   * agents when the lease was lost; another error when NATS did not answer, tried again at the
   * next). Returns what stops it.
   */
  renewEvery(everyMs: number, on: { renewed?: (ms: number) => void; failed: (err: unknown) => void }): () => void {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const next = () => {
      if (stopped || this.#state === 'closed') return;
      timer = setTimeout(
        () =>
          void (async () => {
            const t0 = performance.now();
            try {
              await this.renew();
              if (this.#state === 'held') on.renewed?.(performance.now() - t0);
            } catch (err) {
              on.failed(err);
            } finally {
              // Whatever a hook threw, the next renewal is scheduled.
              next();
            }
          })(),
        everyMs,
      );
      timer.unref();
    };
    next();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /** Whether the lease was lost and not yet taken again (the next renewal or claim takes it). */
  get lost(): boolean {
    return this.#state === 'lost';
  }

  /**
   * After a lost lease: takes this host's key again under a new run, as `open` does (its own earlier
   * run counts as ended). A claim and a renewal that both find the lease lost share one.
   */
  #rejoin(): Promise<void> {
    this.#rejoining ??= (async () => {
      try {
        const { run, revision, sentAt } = await takeLease(this.#kv, this.#o, this.#run);
        if (this.#state !== 'lost') return;
        this.#run = run;
        this.#hostRevision = revision;
        this.#deadline = sentAt + this.#o.leaseMs;
        this.#state = 'held';
      } finally {
        this.#rejoining = undefined;
      }
    })();
    return this.#rejoining;
  }

  async release(id: string): Promise<void> {
    const revision = this.#held.get(id);
    if (revision === undefined) return;
    this.#held.delete(id);
    this.#succeeded.delete(id);
    try {
      await this.#kv.delete(agentKey(id), { previousSeq: revision });
    } catch (err) {
      // Taken since: it is the new holder's now.
      if (!lostRace(err)) throw err;
    }
  }

  /**
   * The token of the claim this one took over from an earlier run of this host (a supervisor
   * restarted, or a lease lost and taken again), when it took `id` straight from it: an agent that
   * run started, still running, may go on under the new claim. Undefined otherwise.
   */
  succeeded(id: string): number | undefined {
    return this.#state === 'held' && this.#held.has(id) ? this.#succeeded.get(id) : undefined;
  }

  /** Every agent held now, with its token. */
  held(): Array<[id: string, token: number]> {
    return this.#state === 'held' ? [...this.#held.entries()] : [];
  }

  holds(id: string): number | undefined {
    return this.#state === 'held' ? this.#held.get(id) : undefined;
  }

  /** A view of the bucket kept current by a watch: each host's last renewal and each agent's placement, for status. */
  view(logger: Logger): Promise<PlacementView> {
    return PlacementView.open(this.#kv, logger);
  }

  /** Which host holds each placed agent, read from the bucket. */
  async placements(): Promise<Map<string, Placement & { token: number }>> {
    const out = new Map<string, Placement & { token: number }>();
    for await (const key of await this.#kv.keys('agent.>')) {
      const entry = await this.#kv.get(key);
      if (entry?.operation === 'PUT') out.set(key.slice('agent.'.length), { ...readEntry(entry, PlacementSchema), token: entry.revision });
    }
    return out;
  }

  /**
   * Stops claiming and renewing (the supervisor stops). The lease is left to end on its own: agents
   * this host started may run until their fence, so no other host may take them before the lease
   * ends; a supervisor started again from the same data directory takes it over at once.
   */
  close(): Promise<void> {
    this.#coordinating = undefined;
    this.#held.clear();
    this.#succeeded.clear();
    this.#state = 'closed';
    return Promise.resolve();
  }

  #lease(): HostLease {
    return hostLease(this.#o, this.#run);
  }
}
