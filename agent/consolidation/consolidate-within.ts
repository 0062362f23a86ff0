import { type Logger, withDeadline } from '../../shared/platform/index.js';
import type { MemoryConsolidator } from './memory-consolidator.js';

/**
 * Consolidates everything (contradictions among what is new since the last run) for a
 * schedule or a passivation; waits at most `budgetMs`, and never throws: a failure is logged.
 */
export async function consolidateWithin(
  consolidator: MemoryConsolidator,
  trigger: 'schedule' | 'passivation',
  budgetMs: number,
  logger: Logger,
): Promise<void> {
  const run = consolidator.consolidate({}, { trigger }).then(
    () => true,
    (err: unknown) => {
      logger.warn({ err: (err as Error).message, trigger }, 'consolidation failed');
      return true;
    },
  );
  const done = Number.isFinite(budgetMs) ? await withDeadline(run, budgetMs, () => false) : await run;
  if (!done) logger.warn({ budget_ms: budgetMs, trigger }, 'consolidation ran over its budget; going on without waiting for it');
}
