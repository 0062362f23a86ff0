import type { LifecycleState } from '../../shared/domain/index.js';
import { ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { AgentEntry } from '../lifecycle/agent-registry.js';
import type { Score } from '../relevance/relevance-evaluator.js';
import type { ScoredAgent } from './decide-states.js';

/**
 * Each agent with the score it is decided on. An agent left unscored (outside a round's `only`) is held
 * where it is with the score and source it had; one whose scoring failed is held too, and named in `errors`.
 */
export function scoredAgents(
  entries: readonly AgentEntry[],
  scores: ReadonlyMap<string, Score | ThymosError>,
  pins: ReadonlyMap<string, LifecycleState>,
  logger: Logger,
): { scored: ScoredAgent[]; errors: Map<string, ThymosError>; held: Map<string, string> } {
  const errors = new Map<string, ThymosError>();
  const held = new Map<string, string>();
  const scored: ScoredAgent[] = entries.map((e) => {
    const s = scores.get(e.id);
    // Outside `only`: held where it is, with the score and source it had.
    if (s === undefined) {
      held.set(e.id, e.source ?? 'default');
      return { id: e.id, current: e.state, since: e.since, score: e.score ?? 0, source: 'default', pinned: e.state };
    }
    if (s instanceof ThymosError) {
      // A broken score leaves the agent where it is (held like a pin); the report names the failure.
      logger.warn({ agent: e.id, err: s.message }, 'scoring failed');
      errors.set(e.id, s);
      return { id: e.id, current: e.state, since: e.since, score: e.score ?? 0, source: 'default', pinned: e.state };
    }
    return { id: e.id, current: e.state, since: e.since, score: s.score, source: s.source, pinned: pins.get(e.id) };
  });
  return { scored, errors, held };
}
