import { hostname } from 'node:os';
import { basename } from 'node:path';
import { createInbox, headers, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import { isNoResponders } from './nats-connection.js';
import { Subjects } from '../protocol/fleet-names.js';
import { PingReplySchema, ProgressMessageSchema, SupervisorReplySchema, type PingReply, type ProgressMessage } from '../protocol/supervisor-protocol.js';
import { parseJsonOrUndefined } from '../protocol/parse-json.js';

/** The header that says who sent a control request, for the supervisor's audit log. */
export const REQUESTER_HEADER = 'Thymos-By';
/** This process, as the audit log names it: program, pid and host (self-declared, not authenticated). */
const REQUESTER = `${basename(process.argv[1] ?? 'node')}#${process.pid}@${hostname()}`;
/** How often a watched request checks that the supervisor it went to still runs. */
const WATCH_EVERY_MS = 1000;

/** Options of one request. */
export interface RequestOptions {
  onProgress?: (p: ProgressMessage) => void;
  timeoutMs?: number;
  /**
   * Fail with SUPERVISOR_LOST as soon as the supervisor that took the request stops (it no
   * longer answers `ping`, or another process does), instead of waiting out the timeout.
   * For long supervisor operations (reconcile, start, stop…).
   */
  watch?: boolean;
}

/**
 * Sends requests to a fleet's supervisor and turns coded error replies back into
 * ThymosErrors. `subject` maps an op to its subject: the control API by default,
 * `Subjects.world` for the world store.
 */
export class SupervisorRequester {
  readonly #nc: NatsConnection;
  readonly #timeoutMs: number;
  readonly #subject: (op: string) => string;

  constructor(nc: NatsConnection, timeoutMs: number, subject: (op: string) => string = Subjects.supervisor) {
    this.#nc = nc;
    this.#timeoutMs = timeoutMs;
    this.#subject = subject;
  }

  async request<T>(op: string, payload: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<T> {
    const subject = this.#subject(op);
    let progressSub: ReturnType<NatsConnection['subscribe']> | undefined;
    const body = { ...payload };
    if (options.onProgress) {
      const inbox = createInbox();
      const listener = options.onProgress;
      progressSub = this.#nc.subscribe(inbox, {
        callback: (_err, msg) => {
          const p = ProgressMessageSchema.safeParse(parseJsonOrUndefined(msg.string()));
          if (p.success) listener(p.data);
        },
      });
      body.progress = inbox;
    }
    const timeout = options.timeoutMs ?? this.#timeoutMs;
    const watchdog = options.watch ? await this.#watch(op) : undefined;
    let text: string;
    try {
      const h = headers();
      h.set(REQUESTER_HEADER, REQUESTER);
      const pending = this.#nc.request(subject, JSON.stringify(body), { timeout, headers: h });
      if (watchdog) pending.catch(() => undefined); // lost to the watchdog: its late failure is nobody's
      text = (await (watchdog ? Promise.race([pending, watchdog.lost]) : pending)).string();
    } catch (err) {
      if (err instanceof ThymosError) throw err;
      if (isNoResponders(err)) {
        throw new ThymosError(ErrorCode.FLEET_NOT_RUNNING, `no supervisor answers on ${subject}: start the fleet with thymos up`, { cause: err });
      }
      throw new ThymosError(ErrorCode.TIMEOUT, `the supervisor did not answer ${op} within ${timeout} ms ([supervisor] request_timeout_ms)`, { cause: err });
    } finally {
      watchdog?.stop();
      progressSub?.unsubscribe();
    }
    const reply = SupervisorReplySchema.parse(JSON.parse(text));
    if (!reply.ok) throw new ThymosError(reply.error.code, reply.error.message, { location: reply.error.location, details: reply.error.details });
    return reply.result as T;
  }

  /**
   * Asks which supervisor runs now, then checks again every second while the request is
   * pending: `lost` rejects once that process no longer answers. Undefined when no
   * supervisor answers yet (the request itself reports that).
   */
  async #watch(op: string): Promise<{ lost: Promise<never>; stop(): void } | undefined> {
    const first = await this.#ping();
    if (!first || first === 'gone') return undefined;
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const lost = new Promise<never>((_, reject) => {
      const tick = async () => {
        const now = await this.#ping();
        if (stopped) return;
        if (now === 'gone' || (now && now.pid !== first.pid)) {
          const after = now === 'gone' ? 'no supervisor answers now' : `pid ${now.pid} runs now`;
          const next = op === 'reconcile' ? 'a restarted supervisor finishes an interrupted reconcile by itself; ' : '';
          reject(new ThymosError(ErrorCode.SUPERVISOR_LOST, `the supervisor (pid ${first.pid}) stopped while handling ${op} (${after}): ${next}see thymos status`));
          return;
        }
        timer = setTimeout(() => void tick(), WATCH_EVERY_MS);
      };
      timer = setTimeout(() => void tick(), WATCH_EVERY_MS);
    });
    lost.catch(() => undefined);
    return {
      lost,
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }

  /** The supervisor answering now; 'gone' when none does; undefined when the answer did not come in time. */
  async #ping(): Promise<PingReply | 'gone' | undefined> {
    try {
      const reply = SupervisorReplySchema.parse(JSON.parse((await this.#nc.request(this.#subject('ping'), '{}', { timeout: 2000 })).string()));
      const parsed = reply.ok ? PingReplySchema.safeParse(reply.result) : undefined;
      return parsed?.success ? parsed.data : undefined;
    } catch (err) {
      return isNoResponders(err) ? 'gone' : undefined;
    }
  }
}
