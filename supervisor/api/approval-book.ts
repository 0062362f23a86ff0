import { RecordId, type Surreal } from 'surrealdb';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  type ApprovalDecision,
  ApprovalDecisionSchema,
  type CallDecisionReport,
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
`;

/** How long a decided call is kept, so an agent that asks again (after a lost reply) gets the same answer. */
const DECIDED_KEPT_MS = 7 * 86_400_000;

interface Entry {
  call: PendingCall;
  decision: ApprovalDecision | undefined;
  updated: number;
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
 */
export class ApprovalBook {
  readonly #db: Surreal;
  readonly #deliver: DeliverDecision;
  readonly #logger: Logger;
  readonly #entries = new Map<string, Entry>();
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
    const [rows] = await db.query<[Array<{ call: string; decision?: string | null; updated: number }>]>(
      'SELECT call, decision, updated FROM approval',
    );
    for (const row of rows ?? []) {
      const call = PendingCallSchema.safeParse(JSON.parse(row.call));
      const decision = row.decision ? ApprovalDecisionSchema.safeParse(JSON.parse(row.decision)) : undefined;
      if (!call.success || decision?.success === false) {
        logger.warn({ row: row.call.slice(0, 200) }, 'approval row is malformed; skipped');
        continue;
      }
      book.#entries.set(call.data.call_id, { call: call.data, decision: decision?.data, updated: row.updated });
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
   * with `max_pending` calls waiting already is refused (INVALID_INPUT).
   */
  async submit(call: PendingCall): Promise<ApprovalDecision | null> {
    const known = this.#entries.get(call.call_id);
    // A call a crash cut off after it was decided is asked about anew: each crash is a round of its own (`interrupted_at`).
    if (known && known.call.interrupted_at === call.interrupted_at)
      return known.call.agent === call.agent ? (known.decision ?? null) : null;
    if (known && known.call.agent !== call.agent) return null;
    if (this.pending(call.agent).length >= this.#limits.maxPending) {
      throw new ThymosError(
        ErrorCode.INVALID_INPUT,
        `${call.agent} has ${this.#limits.maxPending} calls waiting for approval already ([tools] max_pending)`,
      );
    }
    const latest = Date.now() + this.#limits.approvalTimeoutS * 1000;
    const asked = Date.parse(call.expires_at);
    const expires_at = new Date(Number.isFinite(asked) ? Math.min(asked, latest) : latest).toISOString();
    await this.#save({ call: { ...call, expires_at }, decision: undefined, updated: Date.now() });
    this.#logger.info({ agent: call.agent, call: call.call_id, tool: call.tool, caller: call.caller }, 'tool call waits for approval');
    return null;
  }

  /** The calls not decided yet, oldest first; one agent's when `agent` is given. */
  pending(agent?: string): PendingCall[] {
    return [...this.#entries.values()]
      .filter((e) => !e.decision && (agent === undefined || e.call.agent === agent))
      .map((e) => e.call)
      .sort((a, b) => a.requested_at.localeCompare(b.requested_at));
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

  /** Refuses every pending call past its deadline; forgets decisions older than a week. */
  async sweep(now = Date.now()): Promise<void> {
    for (const id of [...this.#entries.keys()]) {
      const entry = this.#entries.get(id);
      if (!entry) continue;
      if (!entry.decision && !(Date.parse(entry.call.expires_at) > now)) {
        await this.#decide(entry, {
          approved: false,
          by: 'thymos',
          reason: `no decision by ${entry.call.expires_at} ([tools] approval_timeout_s)`,
          at: new Date(now).toISOString(),
        });
      } else if (entry.decision && now - entry.updated > DECIDED_KEPT_MS) {
        this.#entries.delete(entry.call.call_id);
        await this.#db.query('DELETE $id RETURN NONE', { id: new RecordId('approval', entry.call.call_id) });
      }
    }
  }

  async #decide(entry: Entry, decision: ApprovalDecision): Promise<CallDecisionReport> {
    // Taken before anything is awaited: a second decision arriving meanwhile finds this one.
    const decided = { ...entry, decision, updated: Date.now() };
    this.#entries.set(entry.call.call_id, decided);
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
      },
    });
    this.#entries.set(entry.call.call_id, entry);
  }
}
