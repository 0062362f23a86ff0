import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { type DomainSchema, loadDomainSchema } from '../../../shared/domain/domain-schema.js';
import { hearsEvent, type Listener } from '../../../shared/domain/event-filter.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { eventMemoryText, parseWorldEvent } from '../../../shared/protocol/world-event.js';
import { VILLAGE_SCHEMA } from '../../helpers/workspace.js';

let village: DomainSchema;
before(async () => {
  village = await loadDomainSchema(VILLAGE_SCHEMA);
});

const listener = (id: string, location?: string): Listener => {
  const d = village.agents[id]!;
  return { id, name: d.persona.name, tags: d.tags, aliases: d.aliases, location: location ?? d.homeLocation };
};
const who = (raw: unknown) =>
  Object.keys(village.agents)
    .filter((id) => hearsEvent(village.eventFilters, listener(id), parseWorldEvent(raw)))
    .sort();

describe('event filters', () => {
  test('the village filters: same location, mentions by id, name or alias, guards hear danger, the elder hears council', () => {
    assert.deepEqual(who({ type: 'tavern.brawl', location: 'tavern' }), ['tomas_innkeeper']);
    assert.deepEqual(who({ type: 'gossip', mentions: ['Bram'] }), ['bram_smith']);
    assert.deepEqual(who({ type: 'gossip', mentions: ['the old badger'] }), ['elder_rowan']);
    assert.deepEqual(who({ type: 'gossip', mentions: ['old_fenn'] }), ['old_fenn']);
    assert.deepEqual(who({ type: 'wolves', tags: ['danger'] }), ['captain_lysa', 'elder_rowan']);
    assert.deepEqual(who({ type: 'vote', tags: ['council'] }), ['elder_rowan']);
    assert.deepEqual(who({ type: 'weather', tags: ['rain'] }), []);
  });

  test("an agent away from home hears its current location's events, not its home's", () => {
    const e = parseWorldEvent({ type: 'forge.fire', location: 'forge' });
    assert.equal(hearsEvent(village.eventFilters, listener('bram_smith', 'tavern'), e), false);
    assert.equal(hearsEvent(village.eventFilters, listener('old_fenn', 'forge'), e), true);
  });

  test('with no filters an agent hears nothing; a filter limited to some agents or tags applies only to them', () => {
    const e = parseWorldEvent({ type: 'x', tags: ['t'] });
    assert.equal(hearsEvent([], listener('bram_smith'), e), false);
    const only = [{ agents: ['old_fenn'], agentTags: [], eventTags: ['t'], sameLocation: false, mentions: false }];
    assert.equal(hearsEvent(only, listener('old_fenn'), e), true);
    assert.equal(hearsEvent(only, listener('bram_smith'), e), false);
  });

  test('events are validated at the edge, get an id and a time, and read as a sentence', () => {
    const e = parseWorldEvent({ type: 'tavern.brawl', location: 'tavern', payload: { summary: 'Chairs flew' } });
    assert.match(e.id, /^[0-9a-f-]{36}$/);
    assert.ok(Date.parse(e.ts) > 0);
    assert.equal(e.source, 'game');
    assert.equal(eventMemoryText(e), 'Chairs flew (tavern.brawl at tavern)');
    assert.equal(eventMemoryText(parseWorldEvent({ type: 'x', payload: { n: 1 } })), 'x: {"n":1}');
    for (const [raw, field] of [
      [{ type: 'Bad Type' }, 'type'],
      [{ type: 'a..b' }, 'type'],
      [{ type: 'x', id: 'has space' }, 'id'],
      [{ type: 'x', ts: 'yesterday' }, 'ts'],
      [{ type: 'x', extra: 1 }, 'extra'],
      [{ type: 'x', tags: Array(40).fill('t') }, 'tags'],
    ] as const) {
      assert.throws(
        () => parseWorldEvent(raw),
        (err: unknown) => isThymosError(err, 'INVALID_INPUT') && err.message.includes(field),
        JSON.stringify(raw),
      );
    }
  });
});
