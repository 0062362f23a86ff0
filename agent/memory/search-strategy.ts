import { type NamedSearchStrategy, SEARCH_METHODS } from '../../shared/domain/domain-schema.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import type { RecallOptions, SearchStrategy } from './agent-memory.js';

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
    throw new ThymosError(ErrorCode.INVALID_INPUT, `strategy: expected ${known.join(', ')}; got ${JSON.stringify(chosen)}`, { location: { path: 'strategy' } });
  }
  return { strategy: strategy.method, ...(strategy.semanticWeight != null ? { semanticWeight: strategy.semanticWeight } : {}) };
}
