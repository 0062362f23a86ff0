import { type LifecycleSettings } from '../../shared/config/index.js';
import type { LifecycleState } from '../../shared/domain/index.js';
import { STATE_RANK } from '../lifecycle/agent-states.js';
import type { ScoreSource } from '../relevance/relevance-evaluator.js';

export interface ScoredAgent {
  id: string;
  /** State now. */
  current: LifecycleState;
  /** When it entered `current`, ms since the epoch. */
  since: number;
  score: number;
  source: ScoreSource;
  /** Pinned by configuration: held in this state whatever the score. */
  pinned?: LifecycleState | undefined;
}

/** Why a desired state is what it is. */
export type DecisionReason = 'score' | 'forced' | 'pinned' | 'hysteresis' | 'dwell' | 'capacity';

export interface Decision {
  id: string;
  state: LifecycleState;
  reason: DecisionReason;
}

/** The state a score maps to by the thresholds alone. */
export function stateForScore(
  score: number,
  t: Pick<LifecycleSettings, 'threshold_active' | 'threshold_listening' | 'threshold_dormant'>,
): LifecycleState {
  if (score >= t.threshold_active) return 'active';
  if (score >= t.threshold_listening) return 'listening';
  if (score >= t.threshold_dormant) return 'dormant';
  return 'archived';
}

function band(state: LifecycleState, s: LifecycleSettings): [number, number] {
  switch (state) {
    case 'active':
      return [s.threshold_active, Number.POSITIVE_INFINITY];
    case 'listening':
      return [s.threshold_listening, s.threshold_active];
    case 'dormant':
      return [s.threshold_dormant, s.threshold_listening];
    case 'archived':
      return [Number.NEGATIVE_INFINITY, s.threshold_dormant];
  }
}

/**
 * Desired state of every agent: a pure function of scores, current states and
 * settings, so that the same input always gives the same answer.
 *
 * 1. A pin holds. A forced score maps straight to its state.
 * 2. Otherwise an agent keeps its state while the score stays within its band widened by
 *    `hysteresis` on each side, and does not move down before `min_dwell_ms` in its state.
 *    Moves up are never delayed.
 * 3. Capacity: at most `max_running` agents run and `max_active` are active; pinned agents
 *    first, then the highest scores (ties: already running, then id). Agents over the
 *    limits go one step down (active → listening, running → dormant).
 */
export function decideStates(agents: readonly ScoredAgent[], settings: LifecycleSettings, now: number): Map<string, Decision> {
  const out = new Map<string, Decision>();
  for (const a of agents) out.set(a.id, { id: a.id, ...uncapped(a, settings, now) });

  const running = agents.filter((a) => STATE_RANK[out.get(a.id)!.state] >= STATE_RANK.listening).sort(byPriority);
  running.forEach((a, i) => {
    if (i >= settings.max_running) out.set(a.id, { id: a.id, state: 'dormant', reason: 'capacity' });
  });
  const active = running.slice(0, settings.max_running).filter((a) => out.get(a.id)!.state === 'active');
  active.forEach((a, i) => {
    if (i >= settings.max_active) out.set(a.id, { id: a.id, state: 'listening', reason: 'capacity' });
  });
  return out;
}

function uncapped(a: ScoredAgent, s: LifecycleSettings, now: number): Omit<Decision, 'id'> {
  if (a.pinned) return { state: a.pinned, reason: 'pinned' };
  const byScore = stateForScore(a.score, s);
  if (a.source === 'forced') return { state: byScore, reason: 'forced' };
  if (byScore === a.current) return { state: byScore, reason: 'score' };
  const [low, high] = band(a.current, s);
  if (a.score >= low - s.hysteresis && a.score < high + s.hysteresis) return { state: a.current, reason: 'hysteresis' };
  if (STATE_RANK[byScore] < STATE_RANK[a.current] && now - a.since < s.min_dwell_ms) return { state: a.current, reason: 'dwell' };
  return { state: byScore, reason: 'score' };
}

function byPriority(a: ScoredAgent, b: ScoredAgent): number {
  const pa = a.pinned ? 1 : 0;
  const pb = b.pinned ? 1 : 0;
  if (pa !== pb) return pb - pa;
  if (a.score !== b.score) return b.score - a.score;
  const ra = STATE_RANK[a.current] >= STATE_RANK.listening ? 1 : 0;
  const rb = STATE_RANK[b.current] >= STATE_RANK.listening ? 1 : 0;
  if (ra !== rb) return rb - ra;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
