import type { LifecycleSettings } from '../../shared/config/index.js';
import { type DomainSchema, type LifecycleState, workOf, type WorkRelevance } from '../../shared/domain/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { SkillBacklog } from '../../shared/protocol/index.js';

/** A little past a threshold and its hysteresis, so that the score does move the agent. */
const PAST = 0.01;

/** How much of what a skill's jobs took so far each read with work keeps: the last ten or so reads weigh most. */
const PACE_KEEP = 0.9;

/** Jobs a skill must have been seen to take before how long they take is trusted. */
const PACE_JOBS = 3;

/** What the scores need to know of a worker from the registry: whether it is up, and whether its last start failed. */
export interface WorkerState {
  state: LifecycleState;
  last_error: unknown;
}

/**
 * Relevance from the work waiting (the domain's `workRelevance`): every agent that takes jobs is
 * scored from its skills' backlog on the queues it serves, the highest of them.
 *
 * A skill needs one worker per `[jobs] concurrency` jobs waiting or in hand (at least one when a
 * job was taken since the last read, however quickly it was done), never more than it has; once
 * how long its jobs take is known (worker time over jobs taken, from the reads so far), only as
 * many as finish what waits within one `everyMs`, never fewer than hold jobs now. Its
 * workers are ranked — those up (Active or Listening, or pinned Active) first, then those asleep,
 * then those whose last start failed, then those pinned to a state that takes no jobs; by id within
 * each — and the first as many as are needed are scored from
 * the work, the others as in a lull:
 *
 * - needed now: from just past `threshold_active` (with its hysteresis) up to 1 as the jobs near
 *   `fullBacklog`, or as the oldest nears `urgentAfterMs` — more work makes it more urgent (it
 *   ranks higher under `max_active`);
 * - needed within the last `keepActiveMs` (never less than one `everyMs`): just past
 *   `threshold_active`, so a worker stays Active between the jobs of a flow and takes the next one
 *   at once; while a job has been in hand (or waited) past one `everyMs`, every worker up is
 *   needed — which one holds it is not known, and one told to listen would hand it back;
 * - needed longer ago: just under `threshold_active`, halving every `lullHalfLifeMs`, down to just
 *   past `threshold_dormant` — Listening, then Dormant, never Archived; a rank never needed since
 *   the supervisor started scores that floor: its worker sleeps.
 *
 * So a burst wakes as many workers as it needs rather than every one at once, and a flow keeps
 * as many awake as it keeps busy.
 *
 * `refresh` reads the backlog; `start` does so every `everyMs` and reconciles the workers (only
 * them: an agent without skills keeps what the game loop's reconcile gave it).
 */
export class WorkScores {
  readonly #settings: WorkRelevance;
  readonly #lifecycle: LifecycleSettings;
  readonly #backlog: () => Promise<SkillBacklog[]>;
  readonly #logger: Logger;
  readonly #concurrency: number;
  readonly #entry: (id: string) => WorkerState | undefined;
  readonly #pins: ReadonlyMap<string, LifecycleState>;
  /** Each worker's queue/skill pairs, and each pair's workers by id. */
  readonly #work = new Map<string, string[]>();
  readonly #workersOf = new Map<string, string[]>();
  /** Per queue/skill: the backlog last read, how many workers it needs now, and when each rank was last needed. */
  #rows = new Map<string, SkillBacklog>();
  readonly #demand = new Map<string, number>();
  /** Per queue/skill: worker time spent on its jobs and jobs taken, both fading with each read that had work (Little's law: their ratio is how long a job takes). */
  readonly #pace = new Map<string, { busyMs: number; jobs: number }>();
  readonly #needed = new Map<string, number[]>();
  /** Per queue/skill, as of the last read: each worker's rank, and how many of them are up. */
  #ranks = new Map<string, { rankOf: Map<string, number>; up: number }>();
  /** Per queue/skill: its consumer's deliveries at the last read. */
  readonly #delivered = new Map<string, number>();
  #readAt: number | undefined;
  /** The rounds: stopped for good by `stop`, the next one's timer, the one under way. */
  #started = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  readonly workers: ReadonlySet<string>;

  constructor(o: {
    domain: DomainSchema;
    settings: WorkRelevance;
    lifecycle: LifecycleSettings;
    backlog: () => Promise<SkillBacklog[]>;
    logger: Logger;
    concurrency?: number;
    entry?: (id: string) => WorkerState | undefined;
    pins?: ReadonlyMap<string, LifecycleState>;
  }) {
    this.#settings = o.settings;
    this.#concurrency = o.concurrency ?? 1;
    this.#entry = o.entry ?? (() => undefined);
    this.#pins = o.pins ?? new Map();
    this.#lifecycle = o.lifecycle;
    this.#backlog = o.backlog;
    this.#logger = o.logger;
    for (const [id, agent] of Object.entries(o.domain.agents)) {
      // A skill or queue named twice is one pair, and the agent one of its workers.
      const pairs = [...new Set(workOf(agent, o.domain.queues).map((w) => `${w.queue}/${w.skill}`))];
      if (pairs.length > 0) this.#work.set(id, pairs);
      for (const pair of pairs) this.#workersOf.set(pair, [...(this.#workersOf.get(pair) ?? []), id].sort());
    }
    this.workers = new Set(this.#work.keys());
  }

  /** Reads every skill's backlog from JetStream, and notes which have work now. */
  async refresh(now = Date.now()): Promise<void> {
    const rows = await this.#backlog();
    const since = this.#readAt === undefined ? 0 : Math.max(0, now - this.#readAt);
    this.#rows = new Map(rows.map((r) => [`${r.queue}/${r.skill}`, r]));
    this.#demand.clear();
    // Ranked once a read, not once an agent scored: a reconcile scores every worker of a skill.
    this.#ranks = new Map([...this.#workersOf.keys()].map((pair) => [pair, this.#ranked(pair)]));
    for (const [key, r] of this.#rows) {
      const before = this.#delivered.get(key);
      // A count that went back (the consumer made again, or not read this time: 0) is no measure: the next read starts afresh.
      if (before !== undefined && r.delivered < before) this.#delivered.delete(key);
      else this.#delivered.set(key, r.delivered);
      // A job taken and done between two reads leaves no backlog to see; the consumer's count of deliveries moved.
      const taken = before === undefined ? 0 : Math.max(0, r.delivered - before);
      const jobMs = this.#jobMs(key, taken, r.in_progress, since);
      const demand = Math.min(this.#workersOf.get(key)?.length ?? 0, this.#workersNeeded(r, taken > 0, jobMs));
      this.#demand.set(key, demand);
      // Which worker holds a job is not in the backlog: while one has been in hand (or waited) past a read, every worker up is kept, so none holding it is put to listen (which would hand it back).
      const held = r.in_progress > 0 && r.oldest_ms >= this.#settings.everyMs ? (this.#ranks.get(key)?.up ?? 0) : 0;
      const needed = this.#needed.get(key) ?? [];
      for (let rank = 0; rank < Math.max(demand, held); rank++) needed[rank] = now;
      this.#needed.set(key, needed);
    }
    this.#readAt = now;
  }

  /** How long a job of the pair takes, from what the reads saw so far (`taken` jobs since the last read, `inHand` now, `since` ms ago); undefined until enough jobs were seen. */
  #jobMs(pair: string, taken: number, inHand: number, since: number): number | undefined {
    const pace = this.#pace.get(pair) ?? { busyMs: 0, jobs: 0 };
    if (taken > 0 || inHand > 0) {
      pace.busyMs = pace.busyMs * PACE_KEEP + inHand * since;
      pace.jobs = pace.jobs * PACE_KEEP + taken;
      this.#pace.set(pair, pace);
    }
    return pace.jobs >= PACE_JOBS ? pace.busyMs / pace.jobs : undefined;
  }

  /**
   * Workers a pair needs now: one per `concurrency` jobs waiting or in hand — or, once how long its
   * jobs take is known, as many as finish them within one `everyMs` (a backlog of short jobs needs
   * one worker, not one each), never fewer than hold jobs now; one while jobs flow with none left.
   */
  #workersNeeded(r: SkillBacklog, flowed: boolean, jobMs: number | undefined): number {
    const busy = r.waiting + r.in_progress;
    if (busy === 0) return flowed ? 1 : 0;
    const each = Math.ceil(busy / this.#concurrency);
    if (jobMs === undefined) return each;
    const drain = Math.ceil((busy * jobMs) / (this.#concurrency * this.#settings.everyMs));
    return Math.min(each, Math.max(1, Math.ceil(r.in_progress / this.#concurrency), drain));
  }

  /** An agent's score from the work, or undefined when it takes no jobs or the backlog was never read. */
  score(id: string, now = Date.now()): number | undefined {
    const pairs = this.#work.get(id);
    if (!pairs || this.#readAt === undefined) return undefined;
    return Math.max(...pairs.map((p) => this.#pairScore(p, id, now)));
  }

  /** A worker's place: 0 up (or pinned Active), 1 asleep, 2 its last start failed, 3 pinned to a state that takes no jobs. */
  #group(id: string): number {
    const pin = this.#pins.get(id);
    if (pin) return pin === 'active' ? 0 : 3;
    const e = this.#entry(id);
    if (e?.state === 'active' || e?.state === 'listening') return 0;
    return e?.last_error ? 2 : 1;
  }

  /** A pair's workers ranked by their place (`#group`), by id within each; and how many are up. */
  #ranked(pair: string): { rankOf: Map<string, number>; up: number } {
    const placed = (this.#workersOf.get(pair) ?? [])
      .map((id, i) => ({ id, group: this.#group(id), i }))
      .sort((a, b) => a.group - b.group || a.i - b.i);
    return { rankOf: new Map(placed.map((w, rank) => [w.id, rank])), up: placed.filter((w) => w.group === 0).length };
  }

  #pairScore(pair: string, id: string, now: number): number {
    const { threshold_active: active, threshold_dormant: dormant, hysteresis } = this.#lifecycle;
    const rank = this.#ranks.get(pair)?.rankOf.get(id) ?? -1;
    const row = this.#rows.get(pair);
    const floor = Math.min(1, active + hysteresis + PAST);
    if (row && rank < (this.#demand.get(pair) ?? 0)) {
      const pressure = Math.min(
        1,
        Math.max((row.waiting + row.in_progress) / this.#settings.fullBacklog, row.oldest_ms / this.#settings.urgentAfterMs),
      );
      return floor + (1 - floor) * pressure;
    }
    const asleep = Math.min(1, dormant + hysteresis + PAST);
    // A rank never needed since the supervisor started: its worker sleeps.
    const since = this.#needed.get(pair)?.[rank];
    if (since === undefined) return asleep;
    // Never shorter than a read: a worker needed at one read is not put to listen before the next.
    const idle = now - since - Math.max(this.#settings.keepActiveMs, this.#settings.everyMs);
    if (idle < 0) return floor;
    return Math.max(asleep, (active - PAST) * 0.5 ** (idle / this.#settings.lullHalfLifeMs));
  }

  /**
   * Every `everyMs`: reads the backlog, then hands the workers to `reconcile`. Never two at once;
   * a round that fails is logged and the next one tries again. Runs until `stop`.
   */
  start(reconcile: (only: ReadonlySet<string>) => Promise<unknown>): void {
    if (this.#started) throw new Error('WorkScores.start: the rounds were started already');
    this.#started = true;
    const round = async () => {
      try {
        await this.refresh();
        // Stopped while the backlog was read (the fleet going down): wake nobody.
        if (!this.#stopped) await reconcile(this.workers);
      } catch (err) {
        this.#logger.warn(
          { err: (err as Error).message },
          'work relevance: reading the backlog or reconciling the workers failed; trying again',
        );
      }
    };
    const next = (ms: number) => {
      this.#timer = setTimeout(() => {
        this.#round = round().finally(() => {
          this.#round = undefined;
          if (!this.#stopped) next(this.#settings.everyMs);
        });
      }, ms);
    };
    next(0);
  }

  /**
   * Stops the rounds, and resolves once the one under way (if any) is over: what `thymos down`
   * does before it stops the agents, so that no round wakes a worker it just stopped.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
  }
}
