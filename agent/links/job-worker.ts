import { jetstream, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import { backoffAfter, type Work } from '../../shared/domain/index.js';
import { describeIssues, ErrorCode, isThymosError, ThymosError } from '../../shared/errors/index.js';
import { ownDelivery, published } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  type FleetNames,
  type Job,
  type JobGiveUp,
  JobSchema,
  parseJsonOrUndefined,
  type ToolCallRecord,
} from '../../shared/protocol/index.js';
import { type JobEnding, settledEnding } from '../runtime/job-work.js';
import type { Working } from '../runtime/runtime-ports.js';
import type { JobDeliveries } from './job-deliveries.js';

/** Hands a job given up to the supervisor, which writes its dead letter (only it may). */
export type GiveUp = (given: JobGiveUp) => Promise<unknown>;

/** Resolves with the records of these calls once none is under way (`callsSettled`); rejects when the signal aborts. */
export type CallsSettled = (callIds: readonly string[], signal: AbortSignal) => Promise<ToolCallRecord[]>;

/** What a job worker may be given besides its work. */
export interface JobWorkerOptions {
  /** How many jobs of each queue and skill it works at once (`[jobs] concurrency`). @default 1 */
  concurrency?: number;
  /** When calls are over: without it, a job whose call waits for a person is acknowledged at once. */
  settled?: CallsSettled;
  /**
   * Which deliveries of each job came to this agent (see `JobDeliveries`). Without them, every
   * delivery after the first counts as one another worker may have had.
   */
  deliveries?: JobDeliveries;
}

/** How long one pull waits for a job before it asks again (and looks at the agent's mode). */
const PULL_MS = 5000;
/** How a call that is not over yet stands in a job's steps: waiting for a person, cut off by a crash, or running. */
const UNDER_WAY: ReadonlySet<string> = new Set(['pending', 'interrupted', 'running']);

/**
 * An agent's work from the queues: for each queue and skill it serves, one job at a time (or
 * `[jobs] concurrency` at once) from the skill's shared durable consumer, only while the agent is active and ready (a Listening agent
 * takes none; what waits, waits).
 *
 * Each delivery is worked by the agent (`Working.work`): its behaviour's `work`, else its
 * `[llm.reasoning]` model with its granted tools, else the job's words resolved to one call — every
 * call made as `job:<id>` under the job's idempotency keys, so a job delivered again after a crash
 * makes its calls under the same keys and a tool whose side effects must not repeat answers the
 * first call's outcome (`writes_external`, `irreversible`). While it works, the job is
 * kept (`working`) so the queue's `ackWaitMs` does not give it to another worker.
 *
 * It is acknowledged once done and its calls are over. A job done whose calls still wait for a
 * person (`pending`, or `interrupted` by a crash: see `interruptedCall`) is held: kept from the
 * queue's `ackWaitMs` without holding a place of `[jobs] concurrency`, and settled by how they
 * end — all `ok` (run, or marked done), acknowledged; one refused, given up; one failed, tried
 * again. An agent that stops while it holds a job leaves it unacknowledged: it is delivered again
 * after `ackWaitMs`, and its calls, made again under the same keys, answer as they stand. A
 * delivery after one this agent did not get (`JobDeliveries`) may follow calls another worker
 * made: its calls with side effects that no record here answers, and whose service does not
 * honour their key, wait for a person as interrupted rather than run. One to try again is
 * delivered again after the queue's back-off, until `maxDeliver` (at once when the agent is
 * stopping or listening: it goes to another worker); one given up on,
 * and a message that is not a job, are handed to the supervisor (`job_give_up`), which writes the
 * dead letter on `<fleet>.jobs.dead.<queue>` with the reason and attempts, taking the job from the
 * queue's stream, and takes it off the queue. With no supervisor to take it, the job goes back.
 *
 * Closing stops taking jobs; the job in hand is finished first (its call is never cut in the
 * middle of being recorded), then acknowledged or handed back.
 */
export class JobWorker {
  readonly #runtime: Working;
  readonly #work: readonly Work[];
  readonly #names: FleetNames;
  readonly #logger: Logger;
  #closed = false;
  readonly #loops: Array<Promise<void>> = [];
  /** Resolves the loops that wait for the agent to be active again. */
  #wake: Array<() => void> = [];
  /** The pulls waiting for a job now: stopped when the agent stops taking jobs, so none arrives while it listens. */
  readonly #pulls = new Set<{ stop(): void }>();
  readonly #onState = () => {
    if (!this.#takes()) {
      for (const pull of this.#pulls) pull.stop();
      return;
    }
    const waiting = this.#wake;
    this.#wake = [];
    for (const w of waiting) w();
  };

  readonly #concurrency: number;
  readonly #giveUp: GiveUp;
  readonly #settled: CallsSettled | undefined;
  readonly #deliveries: JobDeliveries | undefined;
  /** The jobs held until their calls are over: aborted when the worker closes. */
  readonly #held = new Set<AbortController>();

  /** `giveUp` hands a job given up to the supervisor (`job_give_up`), which writes its dead letter and takes it off the queue. */
  constructor(runtime: Working, work: readonly Work[], names: FleetNames, logger: Logger, giveUp: GiveUp, options: JobWorkerOptions = {}) {
    this.#runtime = runtime;
    this.#settled = options.settled;
    this.#deliveries = options.deliveries;
    this.#giveUp = giveUp;
    this.#work = work;
    this.#concurrency = options.concurrency ?? 1;
    this.#names = names;
    this.#logger = logger;
  }

  /** Starts one loop per queue and skill; the consumers exist (the supervisor makes them with the queues). */
  async open(nc: NatsConnection): Promise<void> {
    const js = jetstream(nc);
    this.#runtime.on('state', this.#onState);
    await this.#deliveries?.sweep();
    for (const w of this.#work) {
      const consumer = await js.consumers.get(this.#names.jobStream(w.queue), this.#names.skillConsumer(w.skill));
      const next = async (): Promise<JsMsg | null> => {
        const pull = await consumer.fetch({ max_messages: 1, expires: PULL_MS });
        this.#pulls.add(pull);
        try {
          for await (const m of pull) return m;
          return null;
        } finally {
          this.#pulls.delete(pull);
        }
      };
      for (let i = 0; i < this.#concurrency; i++) this.#loops.push(this.#loop(w, next));
    }
    this.#logger.info({ work: this.#work.map((w) => `${w.queue}/${w.skill}`) }, 'taking jobs');
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#runtime.off('state', this.#onState);
    for (const pull of this.#pulls) pull.stop();
    for (const held of this.#held) held.abort();
    for (const w of this.#wake) w();
    this.#wake = [];
    await Promise.allSettled(this.#loops);
  }

  #takes(): boolean {
    const s = this.#runtime.getState();
    return s.mode === 'active' && s.status === 'ready';
  }

  async #loop(w: Work, next: () => Promise<JsMsg | null>): Promise<void> {
    while (!this.#closed) {
      if (!this.#takes()) {
        await new Promise<void>((resolve) => this.#wake.push(resolve));
        continue;
      }
      let m: JsMsg | null;
      try {
        m = await next();
      } catch (err) {
        if (this.#closed) return;
        this.#logger.warn({ err: (err as Error).message, queue: w.queue, skill: w.skill }, 'could not take a job; trying again');
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      if (!m) continue;
      // Another agent may aim its own deliveries at this pull's inbox: only the skill's own jobs are worked (or handed back).
      if (!ownDelivery(m, this.#names.jobStream(w.queue), this.#names.skillConsumer(w.skill), this.#names.job(w.queue, w.skill))) {
        this.#logger.warn(
          { subject: m.subject, queue: w.queue, skill: w.skill },
          "a message not delivered by the skill's consumer dropped",
        );
        continue;
      }
      // nats-server's answer to a pull that named this queue's subject, kept by the stream: no job, so neither worked nor given up.
      if (!published(m.headers)) {
        await this.#ack(m, `seq-${m.seq}`);
        this.#logger.warn({ seq: m.seq, queue: w.queue, skill: w.skill }, 'a message nobody published as a job dropped');
        continue;
      }
      // Noted before anything is done with it, so that a later delivery here knows this one came here too.
      const elsewhere = this.#deliveries ? await this.#deliveries.arrived(m) : m.info.deliveryCount > 1;
      // Taken just as the agent was told to stop or listen: it goes back at once, untouched.
      if (this.#closed || !this.#takes()) {
        m.nak();
        continue;
      }
      await this.#handle(w, m, elsewhere).catch((err: unknown) => {
        // Refused by the agent (it went to Listening or began to stop as the job came): back at once.
        this.#logger.warn({ err: (err as Error).message, seq: m.seq }, 'job not handled; it goes back to the queue');
        m.nak(this.#retryIn(w, m.info.deliveryCount));
      });
    }
  }

  async #handle(w: Work, m: JsMsg, elsewhere: boolean): Promise<void> {
    const raw = parseJsonOrUndefined(m.string());
    const parsed = JobSchema.safeParse(raw);
    if (parsed.success && parsed.data.queue === w.queue && parsed.data.skill === w.skill)
      return this.#workJob(w, m, parsed.data, elsewhere);
    const message = parsed.success
      ? `not a job of ${w.queue}/${w.skill}: it says ${parsed.data.queue}/${parsed.data.skill}`
      : `not a job: ${raw === undefined ? 'not JSON' : describeIssues(parsed.error, raw)}; expected {id, queue, skill, payload, published_at}`;
    await this.#end(w, m, parsed.success ? parsed.data.id : `seq-${m.seq}`, {
      done: false,
      retry: false,
      code: ErrorCode.INVALID_INPUT,
      message,
      steps: [],
    });
  }

  /** Works a job of this queue and skill: ended by how the work ended, or held while a call it made is under way. */
  async #workJob(w: Work, m: JsMsg, job: Job, elsewhere: boolean): Promise<void> {
    const attempts = m.info.deliveryCount;
    const delivery = { attempt: attempts, last: attempts >= w.settings.maxDeliver, seq: m.info.streamSequence, elsewhere };
    const ending = await this.#keptAlive(w, m, (deadline) => this.#runtime.work(job, delivery, deadline));
    const waits = ending.done ? ending.steps.flatMap((s) => (s.call_id !== undefined && UNDER_WAY.has(s.status) ? [s.call_id] : [])) : [];
    if (waits.length > 0 && this.#settled) return this.#hold(w, m, job, elsewhere, waits, this.#settled);
    await this.#end(w, m, job.id, ending);
  }

  /**
   * Keeps a job whose calls are not over from the queue's `ackWaitMs` until they are. Its place
   * of `[jobs] concurrency` is free meanwhile. Calls that ended `ok` (run, or marked done by a
   * person) have the job worked once more, so what it does once they are through is done (tell
   * the customer the refund was made): each call it makes again answers its first outcome, and
   * nothing runs twice. A call refused or failed ends the job by how it ended.
   */
  #hold(w: Work, m: JsMsg, job: Job, elsewhere: boolean, callIds: string[], settled: CallsSettled): void {
    const id = job.id;
    const stop = new AbortController();
    this.#held.add(stop);
    const timer = setInterval(() => m.working(), Math.max(Math.floor(w.settings.ackWaitMs / 3), 200));
    this.#logger.info({ job: id, calls: callIds }, 'job held until its calls are decided and over');
    void settled(callIds, stop.signal)
      .then(
        (records) => {
          const ending = settledEnding(records);
          if (!ending.done || this.#closed) return this.#end(w, m, id, ending);
          this.#logger.info({ job: id, note: ending.note }, 'its calls are through: the job is worked once more');
          clearInterval(timer);
          return this.#workJob(w, m, job, elsewhere);
        },
        // The worker closes: unacknowledged, the job is delivered again after ackWaitMs.
        () => undefined,
      )
      .catch((err: unknown) =>
        this.#logger.warn({ job: id, err: (err as Error).message }, 'a held job was not settled; it is delivered again after ackWaitMs'),
      )
      .finally(() => {
        clearInterval(timer);
        this.#held.delete(stop);
      });
  }

  /** Acknowledges a job done, hands back one to try again, and gives up one not worth another delivery. */
  async #end(w: Work, m: JsMsg, id: string, ending: JobEnding): Promise<void> {
    const attempts = m.info.deliveryCount;
    if (ending.done) {
      await this.#ack(m, id);
      this.#logger.info({ job: id, queue: w.queue, skill: w.skill, attempts, note: ending.note }, 'job done');
      return;
    }
    const last = !ending.retry || attempts >= w.settings.maxDeliver;
    if (!last) {
      const delay = this.#retryIn(w, attempts);
      m.nak(delay);
      this.#logger.warn({ job: id, attempts, code: ending.code, retry_in_ms: delay }, `job failed: ${ending.message}`);
      return;
    }
    const reason = { code: ending.code, message: ending.message.slice(0, 2000) };
    try {
      await this.#giveUp({ queue: w.queue, skill: w.skill, seq: m.info.streamSequence, attempts, reason });
    } catch (err) {
      // Off the queue already (the supervisor caught it, or an earlier try got through): done.
      if (!isThymosError(err, ErrorCode.NOT_FOUND)) {
        // Kept, not lost: handed back, past its last delivery it is the supervisor's from the advisory.
        m.nak(this.#retryIn(w, attempts));
        this.#logger.warn(
          { job: id, attempts, code: ending.code, err: (err as Error).message },
          'job given up, but the supervisor did not take it: it goes back to the queue',
        );
        return;
      }
    }
    // Its dead letter holds it now; the acknowledgement ends this delivery.
    await this.#ack(m, id);
    this.#logger.warn({ job: id, attempts, code: ending.code }, `job given up, a dead letter: ${ending.message}`);
  }

  /** When a job handed back is delivered again: at once when this agent stops or listens (another worker takes it), else after the queue's back-off. */
  #retryIn(w: Work, attempts: number): number {
    return this.#closed || !this.#takes() ? 0 : backoffAfter(w.settings, attempts);
  }

  /**
   * Acknowledges and waits for the server to confirm, then forgets the job's delivery note;
   * unconfirmed, the job may be delivered again (its calls then answer their first outcomes).
   */
  async #ack(m: JsMsg, id: string): Promise<void> {
    await m
      .ackAck()
      .catch((err: unknown) =>
        this.#logger.warn(
          { job: id, err: (err as Error).message },
          'the acknowledgement was not confirmed; the job may be delivered again',
        ),
      );
    await this.#deliveries?.ended(m);
  }

  /**
   * Runs `work` while telling the queue, every third of its ack wait, that the job is still being
   * worked, until the queue's `maxWorkMs`: then its signal is aborted (its model and tool calls
   * stop) and the queue is no longer told, so a `work` that does not stop is given to another
   * worker after `ackWaitMs`.
   */
  async #keptAlive<T>(w: Work, m: JsMsg, work: (deadline: AbortSignal) => Promise<T>): Promise<T> {
    const timer = setInterval(() => m.working(), Math.max(Math.floor(w.settings.ackWaitMs / 3), 200));
    const deadline = new AbortController();
    const spent = setTimeout(() => {
      clearInterval(timer);
      deadline.abort(new ThymosError(ErrorCode.TIMEOUT, `the job was not done within maxWorkMs (${w.settings.maxWorkMs} ms)`));
    }, w.settings.maxWorkMs);
    try {
      return await work(deadline.signal);
    } finally {
      clearInterval(timer);
      clearTimeout(spent);
    }
  }
}
