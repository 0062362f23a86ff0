import type { LifecycleState } from '../../shared/domain/index.js';
import type { ReconcileReport } from '../../shared/protocol/index.js';
import { RUNNING, STATE_RANK } from './agent-states.js';

/** A report as it fills up, before its duration and dry-run flag are known. */
export type Report = Omit<ReconcileReport, 'duration_ms' | 'dry_run' | 'pending' | 'settled'>;

export function emptyReport(): Report {
  return { started: [], stopped: [], upgraded: [], downgraded: [], archived: [], restored: [], unchanged: [], failed: [] };
}

/** How many agents a report moved. */
export function moveCount(r: Report): number {
  return r.started.length + r.stopped.length + r.upgraded.length + r.downgraded.length + r.archived.length + r.restored.length;
}

/** Every list in id order, so two reports of the same moves are equal. */
export function sortReport(r: Report): Report {
  for (const key of ['started', 'stopped', 'upgraded', 'downgraded', 'archived', 'restored', 'unchanged'] as const) r[key].sort();
  r.failed.sort((a, b) => (a.id < b.id ? -1 : 1));
  return r;
}

/** Adds `from`'s entries to `into`'s lists; returns `into`. */
export function mergeReport(into: Report, from: Report): Report {
  for (const key of ['started', 'stopped', 'upgraded', 'downgraded', 'archived', 'restored', 'unchanged'] as const)
    into[key].push(...from[key]);
  into.failed.push(...from.failed);
  return into;
}

/** What moves left running after a reconcile answered did, for the next report; undefined when they did nothing. */
export function settledPart(r: Report): NonNullable<ReconcileReport['settled']> | undefined {
  const { stopped, downgraded, archived, failed } = sortReport(r);
  return stopped.length + downgraded.length + archived.length + failed.length > 0 ? { stopped, downgraded, archived, failed } : undefined;
}

/** What a move would do, for a dry run. */
export function describeMove(r: Report, from: LifecycleState, to: LifecycleState, id: string): void {
  if (RUNNING(from) && RUNNING(to)) (STATE_RANK[to] > STATE_RANK[from] ? r.upgraded : r.downgraded).push(id);
  if (RUNNING(from) && !RUNNING(to)) r.stopped.push(id);
  if (from === 'archived' && to !== 'archived') r.restored.push(id);
  if (to === 'archived') r.archived.push(id);
  if (!RUNNING(from) && RUNNING(to)) r.started.push(id);
}
