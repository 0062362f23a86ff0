import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { isThymosError } from '../../../shared/errors/errors.js';
import { parseAgentEvent } from '../../../shared/protocol/world-event.js';

describe('an event an agent publishes', () => {
  test('has the agent as its source, whether it names itself or leaves the source out', () => {
    assert.equal(parseAgentEvent({ type: 'quest.posted' }, 'captain_lysa').source, 'captain_lysa');
    assert.equal(parseAgentEvent({ type: 'quest.posted', source: 'captain_lysa' }, 'captain_lysa').source, 'captain_lysa');
  });

  test('naming another source is refused, UNAUTHORIZED at source, before anything is sent', () => {
    assert.throws(
      () => parseAgentEvent({ type: 'quest.posted', source: 'game' }, 'captain_lysa'),
      (err: unknown) =>
        isThymosError(err, 'UNAUTHORIZED') &&
        err.location?.path === 'source' &&
        /publishes events as itself \("captain_lysa"\), not as "game"/.test(err.message),
    );
  });

  test('an id it gives is its own: prefixed with the agent, hashed past 64 characters, the same each time', () => {
    assert.equal(
      parseAgentEvent({ type: 'quest.posted', id: 'quest-posted-wolves' }, 'captain_lysa').id,
      'captain_lysa-quest-posted-wolves',
    );
    const long = parseAgentEvent({ type: 'quest.posted', id: 'x'.repeat(64) }, 'captain_lysa').id;
    assert.match(long, /^captain_lysa-[0-9a-f]+$/);
    assert.equal(long.length, 64);
    assert.equal(parseAgentEvent({ type: 'quest.posted', id: 'x'.repeat(64) }, 'captain_lysa').id, long);
    assert.notEqual(parseAgentEvent({ type: 'quest.posted', id: 'tick-7' }, 'elder_rowan').id, 'tick-7', 'not an id the game may use');
    assert.doesNotMatch(
      parseAgentEvent({ type: 'quest.posted' }, 'captain_lysa').id,
      /^captain_lysa-/,
      'none given: a random one, which nobody can foresee',
    );
  });

  test('the rest is checked as any event: a bad type names the field', () => {
    assert.throws(
      () => parseAgentEvent({ type: 'Not A Type' }, 'captain_lysa'),
      (err: unknown) => isThymosError(err, 'INVALID_INPUT') && /type/.test(err.message),
    );
  });
});
