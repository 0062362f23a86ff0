import { hostname } from 'node:os';
import { basename } from 'node:path';

import { headers, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';

import { ErrorCode, isThymosError, ThymosError, toThymosError } from '../errors/errors.js';
import { DEFAULT_FLEET_NAMES, type FleetNames, REQUESTER_HEADER } from '../protocol/fleet-names.js';
import { parseJsonOrUndefined } from '../protocol/parse-json.js';
import {
  type PingReply,
  PingReplySchema,
  type ProgressMessage,
  ProgressMessageSchema,
  SupervisorResultSchemas,
} from '../protocol/supervisor-protocol.js';
import { WorldResultSchemas } from '../protocol/world-protocol.js';
import { codedRequest } from './coded-request.js';
import { replyInbox } from './nats-connection.js';

export { REQUESTER_HEADER };
/** This process, as the audit log names it: program, pid and host (self-declared, not authenticated). */
export const REQUESTER = `${basename(process.argv[1] ?? 'node')}#${process.pid}@${hostname()}`;
/** How often a watched request checks that the supervisor it went to still runs. */
const WATCH_EVERY_MS = 1000;

/** Options of one request. */
export interface SupervisorRequestOptions {
  onProgress?: ((p: ProgressMessage) => void) | undefined;
  timeoutMs?: number;
  /**
   * Fail with SUPERVISOR_LOST as soon as the supervisor that took the request stops (it no
   * longer answers `ping`, or another process does), instead of waiting out the timeout.
   * For long supervisor operations (reconcile, start, stop…).
   */
  watch?: boolean;
}

type Results = Record<string, z.ZodType>;
/** The `{ ok: true, result }` reply of each op. */
type Replies<R extends Results> = { [K in keyof R]: z.ZodType<{ result: z.output<R[K]> }> };

/**
 * Sends requests to an API the fleet's supervisor answers — its control API
 * (`<fleet>.supervisor.<op>`) or the world store (`<fleet>.world.<op>`) — and returns each
 * result validated by the op's schema in `shared/protocol`; coded error replies become
 * ThymosErrors with the supervisor's code.
 */
export class SupervisorRequester<R extends Results> {
  readonly #nc: NatsConnection;
  readonly #timeoutMs: number;
  readonly #subject: (op: string) => string;
  /** Where the supervisor says which process it is (`ping`), as this requester may ask it. */
  readonly #pingSubject: string;
  readonly #replies: Replies<R>;

  private constructor(nc: NatsConnection, timeoutMs: number, subject: (op: string) => string, results: R, pingSubject: string) {
    this.#nc = nc;
    this.#timeoutMs = timeoutMs;
    this.#subject = subject;
    this.#pingSubject = pingSubject;
    // Object.fromEntries loses the op → schema pairing that Replies<R> states; each entry is built from its own op.
    this.#replies = Object.fromEntries(Object.entries(results).map(([op, result]) => [op, z.object({ result })])) as unknown as Replies<R>;
  }

  /**
   * The supervisor's control API: reconcile, status, start, stop… With `agent`, the calls that
   * agent makes (`call_pending`, `agent_endpoint`, `ping`), on its own subjects
   * (`<fleet>.agent.<id>.supervisor.<op>`), which tell the supervisor who asks.
   */
  static control(
    nc: NatsConnection,
    timeoutMs: number,
    names: FleetNames = DEFAULT_FLEET_NAMES,
    agent?: string,
  ): SupervisorRequester<typeof SupervisorResultSchemas> {
    const subject = (op: string) => (agent === undefined ? names.supervisor(op) : names.agentSupervisor(agent, op));
    return new SupervisorRequester(nc, timeoutMs, subject, SupervisorResultSchemas, subject('ping'));
  }

  /**
   * The supervisor that answers for the fleet on this NATS, or undefined when nobody listens
   * there: one fleet has one supervisor, whichever host and data directory it runs from. One that
   * listens but does not answer within `timeoutMs` (busy, or paused) is there all the same, with
   * pid 0; so is one whose answer another version wrote.
   */
  static async running(nc: NatsConnection, timeoutMs: number, names: FleetNames): Promise<PingReply | undefined> {
    try {
      return await SupervisorRequester.control(nc, timeoutMs, names).request('ping');
    } catch (err) {
      if (isThymosError(err, ErrorCode.FLEET_NOT_RUNNING) || isThymosError(err, ErrorCode.UNAUTHORIZED)) return undefined;
      return { pid: 0, started_at: 'unknown', host: `unknown (it did not answer: ${toThymosError(err).message})` };
    }
  }

  /**
   * Refuses a second supervisor of fleet `names` on this NATS (`SUPERVISOR_ALREADY_RUNNING`):
   * throws, naming the host and pid of the one that answered `ping` within `timeoutMs` (see
   * `running`), and saying so when that host has this one's `[host] name`; returns when none did.
   */
  static async refuseSecond(nc: NatsConnection, timeoutMs: number, names: FleetNames, natsUrl: string, host: string): Promise<void> {
    const other = await SupervisorRequester.running(nc, timeoutMs, names);
    if (!other) return;
    const since = other.started_at === 'unknown' ? '' : `, since ${other.started_at}`;
    const sameName =
      other.host === host ? ` (the [host] name of this host too: each host of a fleet needs its own, and one supervisor runs a fleet)` : '';
    throw new ThymosError(
      ErrorCode.SUPERVISOR_ALREADY_RUNNING,
      `the fleet "${names.fleet}" already has a supervisor on ${natsUrl}: ${other.pid ? `pid ${other.pid} ` : ''}on host ${other.host}${sameName}${since}; one supervisor runs a fleet (stop that one, or give this fleet another [fleet] name)`,
      { details: { ...other } },
    );
  }

  /**
   * The supervisor's API as the approver calls it (`<fleet>.approver.<op>`): `approvals`,
   * `approve`, `refuse`, `ping`. Only a connection with the approver's identity may publish there.
   */
  static approver(
    nc: NatsConnection,
    timeoutMs: number,
    names: FleetNames = DEFAULT_FLEET_NAMES,
  ): SupervisorRequester<typeof SupervisorResultSchemas> {
    return new SupervisorRequester(nc, timeoutMs, (op) => names.approver(op), SupervisorResultSchemas, names.approver('ping'));
  }

  /** The world store's API: tables, get, set, query, subscribe… With `agent`, as that agent, on its own subjects (`<fleet>.agent.<id>.world.<op>`). */
  static world(
    nc: NatsConnection,
    timeoutMs: number,
    names: FleetNames = DEFAULT_FLEET_NAMES,
    agent?: string,
  ): SupervisorRequester<typeof WorldResultSchemas> {
    const ping = agent === undefined ? names.supervisor('ping') : names.agentSupervisor(agent, 'ping');
    return new SupervisorRequester(
      nc,
      timeoutMs,
      (op) => (agent === undefined ? names.world(op) : names.agentWorld(agent, op)),
      WorldResultSchemas,
      ping,
    );
  }

  async request<K extends keyof R & string>(
    op: K,
    payload: Record<string, unknown> = {},
    options: SupervisorRequestOptions = {},
  ): Promise<z.output<R[K]>> {
    const subject = this.#subject(op);
    let progressSub: ReturnType<NatsConnection['subscribe']> | undefined;
    const body = { ...payload };
    if (options.onProgress) {
      const inbox = replyInbox(this.#nc, 'supervisor');
      const listener = options.onProgress;
      progressSub = this.#nc.subscribe(inbox, {
        callback: (_err, msg) => {
          if (msg.reply) return; // not the supervisor's: a JetStream delivery aimed here
          const p = ProgressMessageSchema.safeParse(parseJsonOrUndefined(msg.string()));
          if (p.success) listener(p.data);
        },
      });
      body.progress = inbox;
    }
    const timeout = options.timeoutMs ?? this.#timeoutMs;
    const watchdog = options.watch ? await this.#watch(op) : undefined;
    try {
      const h = headers();
      h.set(REQUESTER_HEADER, REQUESTER);
      const reply = await codedRequest(this.#nc, subject, body, this.#replies[op], {
        timeoutMs: timeout,
        asked: 'supervisor',
        headers: h,
        abandon: watchdog?.lost,
        unanswered: (why, err) =>
          why === 'no-responders'
            ? new ThymosError(ErrorCode.FLEET_NOT_RUNNING, `no supervisor answers on ${subject}: start the fleet with thymos up`, {
                cause: err,
              })
            : new ThymosError(
                ErrorCode.TIMEOUT,
                `the supervisor did not answer ${op} within ${timeout} ms ([supervisor] request_timeout_ms)`,
                { cause: err },
              ),
      });
      return reply.result;
    } finally {
      watchdog?.stop();
      progressSub?.unsubscribe();
    }
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
          const next =
            op === 'reconcile'
              ? 'a restarted supervisor, or under placement by lease the host that takes the fleet over, finishes an interrupted reconcile by itself; '
              : '';
          reject(
            new ThymosError(
              ErrorCode.SUPERVISOR_LOST,
              `the supervisor (pid ${first.pid}) stopped while handling ${op} (${after}): ${next}see thymos status`,
            ),
          );
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

  /** The supervisor answering now; 'gone' when none does; undefined when the answer did not come in time or made no sense. */
  async #ping(): Promise<PingReply | 'gone' | undefined> {
    try {
      const reply = await codedRequest(this.#nc, this.#pingSubject, {}, z.object({ result: PingReplySchema }), {
        timeoutMs: 2000,
        asked: 'supervisor',
        unanswered: (why) => new ThymosError(why === 'no-responders' ? ErrorCode.FLEET_NOT_RUNNING : ErrorCode.TIMEOUT, why),
      });
      return reply.result;
    } catch (err) {
      return err instanceof ThymosError && err.code === ErrorCode.FLEET_NOT_RUNNING ? 'gone' : undefined;
    }
  }
}
