import { ThymosConfigSchema } from '../shared/config/thymos-config.js';
import { type DomainSchema, parseDomainSchema } from '../shared/domain/domain-schema.js';
import { parseReconcileContext } from '../shared/protocol/reconcile-context.js';
import { decideStates, type ScoredAgent } from '../supervisor/reconcile/decide-states.js';
import { RelevanceEvaluator } from '../supervisor/relevance/relevance-evaluator.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const SIZES = [100, 1000, 10_000];
const RUNS = 40;
const STATES = ['active', 'listening', 'dormant', 'archived'] as const;

/** A domain of n agents over 50 locations with the village's four kinds of rule. */
function domainOf(n: number): DomainSchema {
  const agents: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) agents[`npc_${i}`] = { persona: { name: `NPC ${i}` }, homeLocation: `place_${i % 50}` };
  return parseDomainSchema({
    agents,
    relevanceRules: [
      { name: 'same location', condition: { kind: 'same_as', property: 'location', global: 'player_location' }, score: 0.9 },
      { name: 'in party', condition: { kind: 'truthy', property: 'in_party' }, score: 1 },
      { name: 'recently talked to', condition: { kind: 'at_most', property: 'ticks_since_talk', value: 3 }, score: 0.6 },
      { name: 'quest', condition: { kind: 'truthy', property: 'active_quest' }, score: 0.5 },
    ],
  });
}

/**
 * What a reconcile decides before any process action: score every registered agent from
 * the context (forced, rules, default) and decide every state with hysteresis, dwell and
 * capacity — the same two steps `FleetController.decide` runs on its in-memory registry
 * (`RelevanceEvaluator.scoreAll`, then `decideStates`).
 */
export const reconcileDecisionScenario: Scenario = {
  name: 'reconcile-decision',
  title: 'Supervisor: reconcile decision time by fleet size (no process actions)',
  async run() {
    const lifecycle = ThymosConfigSchema.parse({ lifecycle: { max_running: 200, max_active: 100 } }).lifecycle;
    const figures: Figure[] = [];
    for (const n of SIZES) {
      const domain = domainOf(n);
      const evaluator = new RelevanceEvaluator({ domain, defaultScore: 0.2 });
      const ids = Object.keys(domain.agents);
      const current = ids.map((id, i) => ({ id, state: STATES[i % 4]!, since: Date.now() - (i % 7) * 5000 }));
      const times: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        // A context that changes every tick: the player moves, a few agents are named.
        const agents: Record<string, Record<string, unknown>> = {};
        for (let k = 0; k < Math.min(50, n); k++)
          agents[`npc_${(run * 7 + k * 13) % n}`] = k % 3 === 0 ? { in_party: true } : { ticks_since_talk: k % 5 };
        agents[`npc_${run % n}`] = { relevance: 1 };
        const t = performance.now();
        const context = parseReconcileContext({ tick: run, global: { player_location: `place_${run % 50}` }, agents });
        const scores = await evaluator.scoreAll(
          current.map((e) => ({ id: e.id, running: e.state === 'active' || e.state === 'listening' })),
          context,
        );
        const scored: ScoredAgent[] = current.map((e) => {
          const s = scores.get(e.id)!;
          if (!('score' in s)) throw s;
          return { id: e.id, current: e.state, since: e.since, score: s.score, source: s.source };
        });
        const decisions = decideStates(scored, lifecycle, Date.now());
        times.push(performance.now() - t);
        if (decisions.size !== n) throw new Error('lost a decision');
      }
      const goal = n === 10_000 ? '≤ 20 ms' : undefined;
      figures.push({ metric: `decision p50, ${n.toLocaleString('en')} agents`, value: round(quantile(times, 0.5), 2), unit: 'ms', goal });
      figures.push({ metric: `decision p95, ${n.toLocaleString('en')} agents`, value: round(quantile(times, 0.95), 2), unit: 'ms' });
    }
    return {
      figures,
      notes: [
        `${RUNS} reconciles per size, each with a different context (player location, 50 agents named, one forced); the first runs (JIT warm-up) are included.`,
        'Measured: context validation with zod, scoring every agent (forced relevance, then the four village rule kinds, then the default), and the decision with hysteresis, dwell time and capacity limits (max_running 200, max_active 100).',
        'Not measured here: asking running agents over NATS (only for agents no rule scores, with a 250 ms deadline by default), registry writes and process actions.',
      ],
    };
  },
};
