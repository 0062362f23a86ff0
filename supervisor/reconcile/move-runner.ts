import type { ThymosConfig } from '../../shared/config/index.js';
import type { LifecycleState } from '../../shared/domain/index.js';
import { toThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { ProgressMessage } from '../../shared/protocol/index.js';
import type { AgentEntry, AgentRegistry } from '../lifecycle/agent-registry.js';
import type { AgentTransitions } from '../lifecycle/agent-transitions.js';
import { emptyReport, mergeReport, type Report } from '../lifecycle/move-report.js';
import type { LateMoves } from './late-moves.js';
import { moveLimits, runMoves } from './move-schedule.js';
import type { FleetOperations } from './operations.js';

/** Called as each agent's transition finishes. */
export type ProgressListener = (p: ProgressMessage) => void;

export /** One agent to move, and the context properties it starts with (its location, say). */
interface Move {
  entry: AgentEntry;
  to: LifecycleState;
  score: number | null;
  reason: string;
  properties?: Record<string, unknown>;
}

/** What running moves takes from the controller. */
export interface Movers {
  config: ThymosConfig;
  registry: AgentRegistry;
  transitions: AgentTransitions;
  logger: Logger;
  late: LateMoves;
  operations: FleetOperations;
}

/**
 * The moves side by side, a move up waiting only for the place a move down frees (see
 * runMoves). With `early`, it is called once the moves up are done with the ids still moving;
 * what those do afterwards goes to `#late` instead of `report`, then to the next caller.
 */
export async function runFleetMoves(
  o: Movers,
  moves: Move[],
  report: Report,
  onProgress: ProgressListener | undefined,
  early?: (pending: readonly string[]) => void,
): Promise<void> {
  const total = moves.length;
  let done = 0;
  const limits = moveLimits(
    o.registry.all().map((e) => e.state),
    o.config.lifecycle,
    o.config.supervisor.concurrency,
  );
  const scheduled = moves.map((m) => ({ ...m, id: m.entry.id, from: m.entry.state }));
  const finished = new Set<string>();
  let answered = false;
  const late = emptyReport();
  // A listener that throws (its connection gone) must not end the operation while moves still run.
  const progress = (p: ProgressMessage) => {
    try {
      onProgress?.(p);
    } catch (err) {
      o.logger.warn({ err: toThymosError(err).message }, 'a progress listener failed');
    }
  };
  await runMoves(
    scheduled,
    limits,
    async (m) => {
      const t0 = performance.now();
      const own = emptyReport();
      const ok = await o.transitions.run(m.id, m.to, m.score, m.reason, own, m.properties ?? {});
      mergeReport(answered ? late : report, own);
      finished.add(m.id);
      o.late.ended(m.id);
      progress({ id: m.id, step: `${m.from} → ${m.to}`, done: ++done, total, ok, ms: Math.round(performance.now() - t0) });
      return ok;
    },
    (m, err) => {
      finished.add(m.id);
      report.failed.push({ id: m.id, code: err.code, message: `${m.id} stays ${m.from}: ${err.message}` });
      progress({ id: m.id, step: `${m.from} → ${m.to}`, done: ++done, total, ok: false, ms: 0 });
    },
    () => {
      o.operations.upsDone();
      if (!early) return;
      answered = true;
      const pending = scheduled.filter((m) => !finished.has(m.id)).map((m) => m.id);
      o.late.answered(pending);
      early(pending);
    },
  );
  if (answered) o.late.record(late);
}
