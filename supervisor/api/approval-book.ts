import { RecordId, type Surreal } from 'surrealdb';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  type ApprovalDecision,
  ApprovalDecisionSchema,
  type ApprovalsCursor,
  type ApprovalsPage,
  type CallDecisionReport,
  jsonBytes,
  type PendingCall,
  PendingCallSchema,
} from '../../shared/protocol/index.js';
import { describeRequester, type Requester } from './control-api.js';

const SCHEMA = `
DEFINE TABLE IF NOT EXISTS approval SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS agent ON approval TYPE string;
DEFINE FIELD IF NOT EXISTS call ON approval TYPE string;
DEFINE FIELD IF NOT EXISTS decision ON approval TYPE option<string>;
DEFINE FIELD IF NOT EXISTS updated ON approval TYPE int;
DEFINE FIELD IF NOT EXISTS received ON approval TYPE option<int>;
`;

/** How long a decided call is kept, so an agent that asks again (after a lost reply) gets the same answer. */
const DECIDED_KEPT_MS = 7 * 86_400_000;
/** Who refuses a call at its deadline (a person's decision names who and which process). */
const TIMED_OUT_BY = 'thymos';
/** How many calls of one agent the book keeps, decided ones included, for each of its `max_pending` places. */
const KEPT_PER_PLACE = 2;

interface Entry {
  call: PendingCall;
  decision: ApprovalDecision | undefined;
  updated: number;
  /** When the supervisor took this question in (a call asked about anew after a crash is a new question). */
  received: number;
}

/** The order calls are listed in, and pages cut: by `requested_at`, then `call_id`. */
function byListing(a: ApprovalsCursor, b: ApprovalsCursor): number {
  if (a.requested_at !== b.requested_at) return a.requested_at < b.requested_at ? -1 : 1;
  return a.call_id < b.call_id ? -1 : a.call_id > b.call_id ? 1 : 0;
}

/** `[tools] approval_timeout_s` and `max_pending`: the supervisor holds calls to them whatever an agent says. */
export interface ApprovalLimits {
  approvalTimeoutS: number;
  maxPending: number;
}

/** Delivers a decision to a running agent; rejects when the agent does not run or does not answer. */
export type DeliverDecision = (agent: string, callId: string, decision: ApprovalDecision) => Promise<unknown>;

/** Who is taken for the same party: a call made over MCP by a Thymos client records its `Thymos-By` as the caller. */
const party = (who: string) => who.replace(/^mcp:/, '');

/**
 * The calls that wait for a person's approval, kept by the supervisor in the world database so
 * that a Dormant agent's call can be decided and a restarted supervisor still has them. Agents
 * hand their `confirm` calls in (again each time they wake); a person approves or refuses
 * through the control API (CLI, library); the decision goes to the agent now if it runs, else
 * when it next hands the call in. A call not decided by its deadline is refused. A decision is
 * made once: deciding a decided call is an error, and handing a decided call in again answers
 * the same decision, so nothing runs twice. A call a crash cut off (`interrupted_at`) is handed
 * in again as a new question, whatever was decided before it ran: approve runs it again, `done`
 * records that it took effect, refuse leaves it.
 *
 * What one agent may keep here is bounded: `max_pending` calls hold a place (see `#holds`), and
 * the book keeps at most twice that many of an agent's calls, decided ones included; past it the
 * agent's oldest decided calls that hold no place are forgotten before their week is out (one
 * handed in again is asked about anew: nothing runs without a decision). Calls are indexed by
 * agent, so a hand-in looks at its own agent's calls only.
 */
export class ApprovalBook {
  readonly #db: Surreal;
  readonly #deliver: DeliverDecision;
  readonly #logger: Logger;
  readonly #entries = new Map<string, Entry>();
  readonly #byAgent = new Map<string, Map<string, Entry>>();
  #sweeper: NodeJS.Timeout | undefined;

  readonly #limits: ApprovalLimits;

  private constructor(db: Surreal, deliver: DeliverDecision, limits: ApprovalLimits, logger: Logger) {
    this.#db = db;
    this.#deliver = deliver;
    this.#limits = limits;
    this.#logger = logger;
  }

  static async open(db: Surreal, deliver: DeliverDecision, limits: ApprovalLimits, logger: Logger): Promise<ApprovalBook> {
    const book = new ApprovalBook(db, deliver, limits, logger);
    await db.query(SCHEMA);
    const [rows] = await db.query<[Array<{ call: string; decision?: string | null; updated: number; received?: number | null }>]>(
      'SELECT call, decision, updated, received FROM approval',
    );
    for (const row of rows ?? []) {
      const call = PendingCallSchema.safeParse(JSON.parse(row.call));
      const decision = row.decision ? ApprovalDecisionSchema.safeParse(JSON.parse(row.decision)) : undefined;
      if (!call.success || decision?.success === false) {
        logger.warn({ row: row.call.slice(0, 200) }, 'approval row is malformed; skipped');
        continue;
      }
      book.#put({ call: call.data, decision: decision?.data, updated: row.updated, received: row.received ?? row.updated });
    }
    return book;
  }

  /** Refuses calls past their deadline every `everyMs` (and forgets decisions kept long enough). */
  startSweeping(everyMs = 1000): void {
    this.#sweeper = setInterval(
      () => void this.sweep().catch((err: unknown) => this.#logger.warn({ err }, 'approval sweep failed')),
      everyMs,
    );
    this.#sweeper.unref();
  }

  stop(): void {
    clearInterval(this.#sweeper);
  }

  /**
   * An agent hands a pending call in: kept (once), and answered with its decision if one was
   * made. Its deadline is at most `approval_timeout_s` from now, whatever the call says; an agent
   * whose calls hold `max_pending` places already is refused (INVALID_INPUT). Handed in twice,
   * the call is kept once and answered the same.
   */
  async submit(call: PendingCall): Promise<ApprovalDecision | null> {
    const known = this.#entries.get(call.call_id);
    // A call a crash cut off after it was decided is asked about anew: each crash is a round of its own (`interrupted_at`).
    if (known && known.call.interrupted_at === call.interrupted_at)
      return known.call.agent === call.agent ? (known.decision ?? null) : null;
    if (known && known.call.agent !== call.agent) return null;
    const now = Date.now();
    // The call asked about anew takes its own place again: it is not counted twice.
    const held = [...(this.#byAgent.get(call.agent)?.values() ?? [])].filter((e) => e !== known && this.#holds(e, now)).length;
    if (held >= this.#limits.maxPending) {
      throw new ThymosError(
        ErrorCode.INVALID_INPUT,
        `${call.agent} has ${this.#limits.maxPending} calls waiting for approval already, or refused at their deadline less than approval_timeout_s after they were handed in ([tools] max_pending)`,
      );
    }
    const latest = now + this.#limits.approvalTimeoutS * 1000;
    const asked = Date.parse(call.expires_at);
    const expires_at = new Date(Number.isFinite(asked) ? Math.min(asked, latest) : latest).toISOString();
    await this.#save({ call: { ...call, expires_at }, decision: undefined, updated: now, received: now });
    await this.#trim(call.agent, now);
    this.#logger.info({ agent: call.agent, call: call.call_id, tool: call.tool, caller: call.caller }, 'tool call waits for approval');
    return null;
  }

  /** The calls not decided yet, oldest first; one agent's when `agent` is given. */
  pending(agent?: string): PendingCall[] {
    const entries = agent === undefined ? this.#entries.values() : (this.#byAgent.get(agent)?.values() ?? []);
    return [...entries]
      .filter((e) => !e.decision)
      .map((e) => e.call)
      .sort(byListing);
  }

  /**
   * One page of `pending(agent)`: the calls after `after`, as many as fit in `budgetBytes` of JSON
   * (one at least, whatever it weighs: a call fits in a message, as its agent handed it in), each
   * whole, and where the next page begins (null after the last).
   */
  page(agent: string | undefined, after: ApprovalsCursor | undefined, budgetBytes: number): ApprovalsPage {
    const all = this.pending(agent);
    let i = after === undefined ? 0 : all.findIndex((c) => byListing(c, after) > 0);
    if (i < 0) return { calls: [], next: null };
    const calls: PendingCall[] = [];
    for (let used = 0; i < all.length; i++) {
      const size = jsonBytes(all[i]) + 1;
      if (calls.length > 0 && used + size > budgetBytes) break;
      calls.push(all[i]!);
      used += size;
    }
    const last = calls.at(-1);
    return { calls, next: i < all.length && last ? { requested_at: last.requested_at, call_id: last.call_id } : null };
  }

  /**
   * Approves or refuses one pending call as `requester` (recorded as `client (program#pid@host)`).
   * Refused: a call not known (NOT_FOUND), of another agent, decided already (INVALID_INPUT), or
   * made by the same process (TOOL_DENIED).
   */
  async decide(
    agent: string,
    callId: string,
    approved: boolean,
    requester: Requester,
    reason: string,
    done = false,
  ): Promise<CallDecisionReport> {
    const by = describeRequester(requester);
    const entry = this.#entries.get(callId);
    if (!entry || entry.call.agent !== agent) {
      throw new ThymosError(
        ErrorCode.NOT_FOUND,
        `no call ${JSON.stringify(callId)} of ${agent} waits for approval; thymos approvals ${agent} lists those that do`,
        { location: { path: 'call_id' } },
      );
    }
    if (entry.decision)
      throw new ThymosError(
        ErrorCode.INVALID_INPUT,
        `call ${callId} was ${entry.decision.approved ? 'approved' : 'refused'} already by ${entry.decision.by}`,
        { location: { path: 'call_id' } },
      );
    if (party(entry.call.caller) === party(requester.said))
      throw new ThymosError(
        ErrorCode.TOOL_DENIED,
        `${requester.said} made call ${callId}, and nobody approves or refuses a call they made`,
      );
    if (Date.parse(entry.call.expires_at) <= Date.now())
      throw new ThymosError(ErrorCode.INVALID_INPUT, `call ${callId} expired at ${entry.call.expires_at}; it is refused`, {
        location: { path: 'call_id' },
      });
    if (done && entry.call.interrupted_at === undefined)
      throw new ThymosError(
        ErrorCode.INVALID_INPUT,
        `call ${callId} has not run: only a call a crash interrupted can be marked done; approve or refuse it`,
        { location: { path: 'done' } },
      );
    return this.#decide(entry, { approved, ...(done ? { done } : {}), by, reason, at: new Date().toISOString() });
  }

  /** Refuses every pending call past its deadline; forgets decisions older than a week. Run twice, it finds nothing more to do. */
  async sweep(now = Date.now()): Promise<void> {
    for (const id of [...this.#entries.keys()]) {
      const entry = this.#entries.get(id);
      if (!entry) continue;
      if (!entry.decision && !(Date.parse(entry.call.expires_at) > now)) {
        await this.#decide(entry, {
          approved: false,
          by: TIMED_OUT_BY,
          reason: `no decision by ${entry.call.expires_at} ([tools] approval_timeout_s)`,
          at: new Date(now).toISOString(),
        });
      } else if (entry.decision && now - entry.updated > DECIDED_KEPT_MS) {
        await this.#forget(entry);
      }
    }
  }

  /**
   * Whether a call holds one of its agent's `max_pending` places: while it waits, and once
   * refused at its deadline, until `approval_timeout_s` after it was handed in. A person's
   * decision frees its place at once. Why not clamp a deadline in the past to now instead: the
   * deadline is the agent's to shorten, and one a second ahead is refused by the sweep as soon,
   * freeing its place, so an agent could hand in any number of calls (each kept for a week).
   * Counted this way, an agent has at most `max_pending` calls per `approval_timeout_s` that no
   * person decided, whatever deadlines it writes; an honest agent's call, whose deadline is
   * `approval_timeout_s` after it was made, frees its place when it is refused, as before.
   */
  #holds(entry: Entry, now: number): boolean {
    if (!entry.decision) return true;
    return entry.decision.by === TIMED_OUT_BY && now < entry.received + this.#limits.approvalTimeoutS * 1000;
  }

  /** Forgets the oldest decided calls of `agent` that hold no place, past what one agent may keep. */
  async #trim(agent: string, now: number): Promise<void> {
    const mine = this.#byAgent.get(agent);
    const over = (mine?.size ?? 0) - this.#limits.maxPending * KEPT_PER_PLACE;
    if (!mine || over <= 0) return;
    const spare = [...mine.values()].filter((e) => !this.#holds(e, now)).sort((a, b) => a.updated - b.updated);
    for (const entry of spare.slice(0, over)) await this.#forget(entry);
  }

  #put(entry: Entry): void {
    this.#entries.set(entry.call.call_id, entry);
    const mine = this.#byAgent.get(entry.call.agent) ?? new Map<string, Entry>();
    mine.set(entry.call.call_id, entry);
    this.#byAgent.set(entry.call.agent, mine);
  }

  async #forget(entry: Entry): Promise<void> {
    this.#entries.delete(entry.call.call_id);
    const mine = this.#byAgent.get(entry.call.agent);
    mine?.delete(entry.call.call_id);
    if (mine?.size === 0) this.#byAgent.delete(entry.call.agent);
    await this.#db.query('DELETE $id RETURN NONE', { id: new RecordId('approval', entry.call.call_id) });
  }

  async #decide(entry: Entry, decision: ApprovalDecision): Promise<CallDecisionReport> {
    // Taken before anything is awaited: a second decision arriving meanwhile finds this one.
    const decided = { ...entry, decision, updated: Date.now() };
    this.#put(decided);
    await this.#save(decided);
    const { agent, call_id, tool } = entry.call;
    this.#logger.info({ agent, call: call_id, tool, approved: decision.approved, by: decision.by }, 'tool call decided');
    const delivered = await this.#deliver(agent, call_id, decision).then(
      () => true,
      (err: unknown) => {
        this.#logger.info({ agent, call: call_id, err: (err as Error).message }, 'decision kept until the agent hands the call in again');
        return false;
      },
    );
    return { call_id, agent, tool, decision: decision.done === true ? 'done' : decision.approved ? 'approved' : 'refused', delivered };
  }

  async #save(entry: Entry): Promise<void> {
    await this.#db.query('UPSERT $id CONTENT $row RETURN NONE', {
      id: new RecordId('approval', entry.call.call_id),
      row: {
        agent: entry.call.agent,
        call: JSON.stringify(entry.call),
        decision: entry.decision ? JSON.stringify(entry.decision) : undefined,
        updated: entry.updated,
        received: entry.received,
      },
    });
    this.#put(entry);
  }
}
