import type { LifecycleSettings } from '../../shared/config/fleet-settings.js';
import type { DomainSchema } from '../../shared/domain/domain-schema.js';
import { workOf,type WorkRelevance } from '../../shared/domain/queue-schema.js';
import type { Logger } from '../../shared/platform/logger.js';
import type { SkillBacklog } from '../../shared/protocol/job.js';

/** A little past a threshold and its hysteresis, so that the score does move the agent. */
const PAST = 0.01;

/**
 * Relevance from the work waiting (the domain's `workRelevance`): every agent that takes jobs is
 * scored from its skills' backlog on the queues it serves, the highest of them:
 *
 * - jobs waiting or in hand: from just past `threshold_active` (with its hysteresis) up to 1 as
 *   they near `fullBacklog`, or as the oldest nears `urgentAfterMs` — any work wakes every agent
 *   with the skill, more work makes it more urgent (it ranks higher under `max_active`);
 * - none now, but a job taken since the last read or within `keepActiveMs`: just past
 *   `threshold_active` — a flow of jobs each done between two reads keeps its workers Active,
 *   taking the next one at once, rather than Listening between jobs;
 * - none for longer: just under `threshold_active`, halving every `lullHalfLifeMs`, down to just
 *   past `threshold_dormant` — Listening, then Dormant, never Archived; a skill that had no work
 *   since the supervisor started scores that floor: its workers sleep.
 *
 * `refresh` reads the backlog; `start` does so every `everyMs` and reconciles the workers (only
 * them: an agent without skills keeps what the game loop's reconcile gave it).
 */
export class WorkScores {
  readonly #settings: WorkRelevance;
  readonly #lifecycle: LifecycleSettings;
  readonly #backlog: () => Promise<SkillBacklog[]>;
  readonly #logger: Logger;
  /** Each worker's queue/skill pairs. */
  readonly #work = new Map<string, string[]>();
  /** Per queue/skill: the backlog last read, and when it last had work. */
  #rows = new Map<string, SkillBacklog>();
  readonly #lastBusy = new Map<string, number>();
  /** Per queue/skill: its consumer's deliveries at the last read. */
  readonly #delivered = new Map<string, number>();
  #readAt: number | undefined;
  /** The rounds: stopped for good by `stop`, the next one's timer, the one under way. */
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  readonly workers: ReadonlySet<string>;

  constructor(o: { domain: DomainSchema; settings: WorkRelevance; lifecycle: LifecycleSettings; backlog: () => Promise<SkillBacklog[]>; logger: Logger }) {
    this.#settings = o.settings;
    this.#lifecycle = o.lifecycle;
    this.#backlog = o.backlog;
    this.#logger = o.logger;
    for (const [id, agent] of Object.entries(o.domain.agents)) {
      const pairs = workOf(agent, o.domain.queues).map((w) => `${w.queue}/${w.skill}`);
      if (pairs.length > 0) this.#work.set(id, pairs);
    }
    this.workers = new Set(this.#work.keys());
  }

  /** Reads every skill's backlog from JetStream, and notes which have work now. */
  async refresh(now = Date.now()): Promise<void> {
    const rows = await this.#backlog();
    this.#rows = new Map(rows.map((r) => [`${r.queue}/${r.skill}`, r]));
    for (const [key, r] of this.#rows) {
      // A job taken and done between two reads leaves no backlog to see; the consumer's count of deliveries moved.
      const before = this.#delivered.get(key);
      if (r.waiting + r.in_progress > 0 || (before !== undefined && r.delivered > before)) this.#lastBusy.set(key, now);
      this.#delivered.set(key, r.delivered);
    }
    this.#readAt = now;
  }

  /** An agent's score from the work, or undefined when it takes no jobs or the backlog was never read. */
  score(id: string, now = Date.now()): number | undefined {
    const pairs = this.#work.get(id);
    if (!pairs || this.#readAt === undefined) return undefined;
    return Math.max(...pairs.map((p) => this.#pairScore(p, now)));
  }

  #pairScore(pair: string, now: number): number {
    const { threshold_active: active, threshold_dormant: dormant, hysteresis } = this.#lifecycle;
    const row = this.#rows.get(pair);
    const busy = row ? row.waiting + row.in_progress : 0;
    const floor = Math.min(1, active + hysteresis + PAST);
    if (busy > 0) {
      const pressure = Math.min(1, Math.max(busy / this.#settings.fullBacklog, row!.oldest_ms / this.#settings.urgentAfterMs));
      return floor + (1 - floor) * pressure;
    }
    const asleep = Math.min(1, dormant + hysteresis + PAST);
    // A skill that never had work since the supervisor started: its workers sleep.
    const since = this.#lastBusy.get(pair);
    if (since === undefined) return asleep;
    const idle = now - since - this.#settings.keepActiveMs;
    if (idle < 0) return floor;
    return Math.max(asleep, (active - PAST) * 0.5 ** (idle / this.#settings.lullHalfLifeMs));
  }

  /**
   * Every `everyMs`: reads the backlog, then hands the workers to `reconcile`. Never two at once;
   * a round that fails is logged and the next one tries again. Runs until `stop`.
   */
  start(reconcile: (only: ReadonlySet<string>) => Promise<unknown>): void {
    const round = async () => {
      try {
        await this.refresh();
        // Stopped while the backlog was read (the fleet going down): wake nobody.
        if (!this.#stopped) await reconcile(this.workers);
      } catch (err) {
        this.#logger.warn({ err: (err as Error).message }, 'work relevance: reading the backlog or reconciling the workers failed; trying again');
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
