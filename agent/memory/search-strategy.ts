import { type NamedSearchStrategy, SEARCH_METHODS } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { CascadeTuning } from './cascade-recall.js';
import type { MemoryRecord } from './memory-record.js';

export type SearchStrategy = 'bm25' | 'vector' | 'hybrid' | 'cascade';

export interface RecallOptions {
  /** How many memories to return. */
  k: number;
  /** @default `[memory] search_strategy` */
  strategy?: SearchStrategy;
  /** Share of the vector ranking in a hybrid recall. @default `[memory] semantic_weight` */
  semanticWeight?: number;
  /** Time of the query (ms); tests pass it to see the forgetting curve. @default Date.now() */
  now?: number;
  /** Reinforce what is returned (access count + 1, last accessed = now). @default true */
  reinforce?: boolean;
  /** Only memories for which this returns true are considered. */
  filter?: (memory: MemoryRecord) => boolean;
  /** Consider memories a newer one superseded too. @default false */
  includeSuperseded?: boolean;
  /** Consider demoted (faded) memories too. @default false */
  includeDemoted?: boolean;
  /** The cascade's parameters to change for this recall (benchmarks and ablations). @default `CASCADE` */
  cascade?: Partial<CascadeTuning>;
}

/**
 * The search a recall runs: `name` is a method (bm25, vector, hybrid, cascade) or one of the domain's
 * named strategies; unset, the agent's own `fallback`; neither, the memory's default.
 */
export function resolveSearchStrategy(
  name: string | undefined,
  fallback: string | null | undefined,
  named: Readonly<Record<string, NamedSearchStrategy>>,
): Pick<RecallOptions, 'strategy' | 'semanticWeight'> {
  const chosen = name ?? fallback ?? undefined;
  if (chosen === undefined) return {};
  if ((SEARCH_METHODS as readonly string[]).includes(chosen)) return { strategy: chosen as SearchStrategy };
  const strategy = Object.hasOwn(named, chosen) ? named[chosen] : undefined;
  if (!strategy) {
    const known = [...SEARCH_METHODS, ...Object.keys(named)];
    throw new ThymosError(ErrorCode.INVALID_INPUT, `strategy: expected ${known.join(', ')}; got ${JSON.stringify(chosen)}`, {
      location: { path: 'strategy' },
    });
  }
  return { strategy: strategy.method, ...(strategy.semanticWeight != null ? { semanticWeight: strategy.semanticWeight } : {}) };
}
