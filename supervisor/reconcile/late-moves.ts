import type { ReconcileReport } from '../../shared/protocol/index.js';
import { emptyReport, mergeReport, type Report, settledPart } from '../lifecycle/move-report.js';

/**
 * Moves down that outlived their reconcile's answer (`returnAfterWakes`): which agents are still
 * moving, and what those moves did, kept until a report hands it to a caller as `settled`.
 */
export class LateMoves {
  readonly #moving = new Set<string>();
  #done: Report | undefined;

  /** The reconcile answered with these still moving. */
  answered(ids: readonly string[]): void {
    for (const id of ids) this.#moving.add(id);
  }

  /** One move has ended (whether it outlived the answer or not). */
  ended(id: string): void {
    this.#moving.delete(id);
  }

  /** What the moves that outlived an answer did, added to what waits for the next report. */
  record(late: Report): void {
    if (settledPart(late)) this.#done = mergeReport(this.#done ?? emptyReport(), late);
  }

  moving(id: string): boolean {
    return this.#moving.has(id);
  }

  /** What waits for the next report, by id, for a log line; undefined when nothing does. */
  waiting(): { stopped: string[]; failed: string[] } | undefined {
    return this.#done && { stopped: this.#done.stopped, failed: this.#done.failed.map((f) => f.id) };
  }

  /** What waits, for the report being made; nothing the second time. */
  take(): ReconcileReport['settled'] {
    const done = this.#done;
    this.#done = undefined;
    return done && settledPart(done);
  }
}
