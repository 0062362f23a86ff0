import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import type { LifecycleState } from '../../../shared/domain/domain-schema.js';
import { decideStates, type ScoredAgent, stateForScore } from '../../../supervisor/reconcile/decide-states.js';

const NOW = 1_000_000_000;
const settings = (over: Record<string, unknown> = {}) =>
  ThymosConfigSchema.parse({ lifecycle: { min_dwell_ms: 10_000, hysteresis: 0.05, ...over } }).lifecycle;
const agent = (id: string, current: LifecycleState, score: number, extra: Partial<ScoredAgent> = {}): ScoredAgent => ({
  id,
  current,
  since: NOW - 60_000,
  score,
  source: 'rules',
  ...extra,
});
const decide = (agents: ScoredAgent[], over?: Record<string, unknown>) => {
  const out = decideStates(agents, settings(over), NOW);
  return Object.fromEntries([...out.values()].map((d) => [d.id, `${d.state}/${d.reason}`]));
};

describe('decideStates', () => {
  test('scores map to the four states by the thresholds, each threshold inclusive', () => {
    const t = settings();
    assert.equal(stateForScore(0.7, t), 'active');
    assert.equal(stateForScore(0.69, t), 'listening');
    assert.equal(stateForScore(0.4, t), 'listening');
    assert.equal(stateForScore(0.1, t), 'dormant');
    assert.equal(stateForScore(0.09, t), 'archived');
    assert.equal(stateForScore(1, t), 'active');
    assert.equal(stateForScore(0, t), 'archived');
  });

  test('a score just past a threshold does not move an agent while it stays within the hysteresis margin', () => {
    assert.deepEqual(
      decide([agent('a', 'listening', 0.72), agent('b', 'active', 0.67), agent('c', 'dormant', 0.43), agent('d', 'listening', 0.36)]),
      {
        a: 'listening/hysteresis',
        b: 'active/hysteresis',
        c: 'dormant/hysteresis',
        d: 'listening/hysteresis',
      },
    );
  });

  test('a score past the margin moves the agent', () => {
    assert.deepEqual(decide([agent('a', 'listening', 0.76), agent('b', 'active', 0.64), agent('c', 'dormant', 0.04)]), {
      a: 'active/score',
      b: 'listening/score',
      c: 'archived/score',
    });
  });

  test('with no hysteresis, a score wobbling across a threshold flips the state each time', () => {
    assert.equal(decide([agent('a', 'listening', 0.71)], { hysteresis: 0 }).a, 'active/score');
    assert.equal(decide([agent('a', 'active', 0.69)], { hysteresis: 0 }).a, 'listening/score');
  });

  test('a move down waits for the dwell time; a move up never does', () => {
    const fresh = { since: NOW - 2_000 };
    assert.deepEqual(decide([agent('down', 'active', 0.2, fresh), agent('up', 'dormant', 0.95, fresh)]), {
      down: 'active/dwell',
      up: 'active/score',
    });
    assert.equal(decide([agent('down', 'active', 0.2, { since: NOW - 10_000 })]).down, 'dormant/score');
    assert.equal(decide([agent('down', 'active', 0.2, fresh)], { min_dwell_ms: 0 }).down, 'dormant/score');
  });

  test('a forced score bypasses hysteresis and dwell time', () => {
    const fresh = { since: NOW - 1, source: 'forced' as const };
    assert.deepEqual(decide([agent('a', 'active', 0.05, fresh), agent('b', 'listening', 0.71, fresh)]), {
      a: 'archived/forced',
      b: 'active/forced',
    });
  });

  test('a pin holds whatever the score, forced or not', () => {
    assert.deepEqual(
      decide([agent('a', 'dormant', 0, { pinned: 'active' }), agent('b', 'active', 1, { pinned: 'dormant', source: 'forced' })]),
      {
        a: 'active/pinned',
        b: 'dormant/pinned',
      },
    );
  });

  test('max_active keeps the highest scores active and makes the rest listen', () => {
    const agents = [agent('a', 'dormant', 0.8), agent('b', 'dormant', 0.95), agent('c', 'dormant', 0.9), agent('d', 'dormant', 0.75)];
    assert.deepEqual(decide(agents, { max_active: 2 }), {
      a: 'listening/capacity',
      b: 'active/score',
      c: 'active/score',
      d: 'listening/capacity',
    });
  });

  test('max_running stops the lowest-scored runners, and a forced score does not bypass it', () => {
    const agents = [
      agent('a', 'active', 0.9),
      agent('b', 'dormant', 1, { source: 'forced' }),
      agent('c', 'listening', 0.5),
      agent('d', 'dormant', 0.45),
    ];
    assert.deepEqual(decide(agents, { max_running: 2, max_active: 2 }), {
      a: 'active/score',
      b: 'active/forced',
      c: 'dormant/capacity',
      d: 'dormant/capacity',
    });
  });

  test('pinned agents keep their place within the capacity before higher scores', () => {
    const agents = [agent('pin', 'dormant', 0, { pinned: 'active' }), agent('x', 'dormant', 1), agent('y', 'dormant', 0.99)];
    assert.deepEqual(decide(agents, { max_running: 2, max_active: 1 }), {
      pin: 'active/pinned',
      x: 'listening/capacity',
      y: 'dormant/capacity',
    });
  });

  test('on equal scores, agents already running keep their place (no churn), then the id decides', () => {
    const agents = [agent('b', 'dormant', 0.8), agent('c', 'active', 0.8), agent('a', 'dormant', 0.8)];
    assert.deepEqual(decide(agents, { max_running: 2, max_active: 2 }), { a: 'active/score', b: 'dormant/capacity', c: 'active/score' });
  });

  test('the same input gives the same decisions (idempotent)', () => {
    const agents = Array.from({ length: 200 }, (_, i) =>
      agent(`a${i}`, (['active', 'listening', 'dormant', 'archived'] as const)[i % 4]!, ((i * 37) % 100) / 100),
    );
    const first = decide(agents, { max_running: 30, max_active: 10 });
    const settled = agents.map((a) => ({ ...a, current: first[a.id]!.split('/')[0] as LifecycleState }));
    const again = decide(settled, { max_running: 30, max_active: 10 });
    assert.deepEqual(
      Object.fromEntries(Object.entries(again).map(([k, v]) => [k, v.split('/')[0]])),
      Object.fromEntries(Object.entries(first).map(([k, v]) => [k, v.split('/')[0]])),
    );
  });

  test('config refuses pins that exceed the capacity, naming the key', () => {
    assert.throws(() => settings({ max_active: 1, pins: { a: 'active', b: 'active' } }), /max_active/);
    assert.throws(() => settings({ max_active: 3, max_running: 2 }), /max_active <= max_running/);
  });
});
