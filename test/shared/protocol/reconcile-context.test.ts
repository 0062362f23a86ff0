import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { isThymosError } from '../../../shared/errors/errors.js';
import { parseReconcileContext, parseReconcileContextText } from '../../../shared/protocol/reconcile-context.js';

const invalid = (raw: unknown, path: RegExp) =>
  assert.throws(
    () => parseReconcileContext(raw),
    (err: unknown) => isThymosError(err, 'INVALID_CONTEXT') && path.test(err.message) && path.test(err.location?.path ?? ''),
  );

describe('reconcile context', () => {
  test('a full context parses, with defaults for what is left out', () => {
    assert.deepEqual(parseReconcileContext({}), { global: {}, agents: {} });
    const c = parseReconcileContext({
      tick: 3,
      global: { player_location: 'forge' },
      agents: { bram_smith: { relevance: 1, mood: 'grim' } },
    });
    assert.equal(c.agents.bram_smith?.relevance, 1);
    assert.equal(c.agents.bram_smith?.mood, 'grim');
  });

  test('each kind of bad input is INVALID_CONTEXT naming the bad path', () => {
    invalid({ agents: { elder_rowan: { relevance: 1.5 } } }, /agents\.elder_rowan\.relevance/);
    invalid({ agents: { elder_rowan: { relevance: 'high' } } }, /agents\.elder_rowan\.relevance/);
    invalid({ agents: { 'Bad Id': {} } }, /agents/);
    invalid({ tick: -1 }, /tick/);
    invalid({ tick: 'soon' }, /tick/);
    invalid({ global: [] }, /global/);
    invalid({ agents: { elder_rowan: 'yes' } }, /agents\.elder_rowan/);
    invalid({ extra: 1 }, /extra/);
    invalid([], /root/);
    invalid(null, /root/);
  });

  test('context text that is not JSON is INVALID_CONTEXT naming the source', () => {
    assert.throws(
      () => parseReconcileContextText('{"tick":', 'ctx.json'),
      (err: unknown) => isThymosError(err, 'INVALID_CONTEXT') && /ctx\.json: expected JSON/.test(err.message),
    );
  });

  test('fuzz: random JSON values either parse or fail with INVALID_CONTEXT, never anything else', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const value = (depth: number): unknown => {
      const r = rnd();
      if (depth > 3 || r < 0.3) return [null, true, 0, -1, 1.5, 'x', 'elder_rowan', 1e308][Math.floor(rnd() * 8)];
      if (r < 0.5) return Array.from({ length: Math.floor(rnd() * 3) }, () => value(depth + 1));
      const keys = ['tick', 'global', 'agents', 'relevance', 'elder_rowan', 'Bad Id', '__proto__', 'x'];
      return Object.fromEntries(
        Array.from({ length: Math.floor(rnd() * 4) }, () => [keys[Math.floor(rnd() * keys.length)]!, value(depth + 1)]),
      );
    };
    for (let i = 0; i < 2000; i++) {
      const raw = value(0);
      try {
        parseReconcileContext(raw);
      } catch (err) {
        assert.ok(isThymosError(err, 'INVALID_CONTEXT'), `unexpected ${String(err)} for ${JSON.stringify(raw)}`);
      }
    }
  });
});
