import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';

import { type DomainSchema, loadDomainSchema } from '../../../shared/domain/domain-schema.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { parseReconcileContext } from '../../../shared/protocol/reconcile-context.js';
import { RelevanceEvaluator } from '../../../supervisor/relevance/relevance-evaluator.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { VILLAGE_SCHEMA } from '../../helpers/workspace.js';

let domain: DomainSchema;
before(async () => {
  domain = await loadDomainSchema(VILLAGE_SCHEMA);
});

const ctx = (raw: unknown) => parseReconcileContext(raw);

describe('RelevanceEvaluator', () => {
  test('the village rules score same location, party, recent talk and quest; the highest matching rule wins', async () => {
    const e = new RelevanceEvaluator({ domain, defaultScore: 0.2 });
    const c = ctx({
      global: { player_location: 'forge' },
      agents: { mira_herbalist: { active_quest: true, ticks_since_talk: 2 }, old_fenn: { in_party: true } },
    });
    assert.deepEqual(await e.score('bram_smith', c, false), { score: 0.9, source: 'rules' }); // home location is the forge
    assert.deepEqual(await e.score('mira_herbalist', c, false), { score: 0.6, source: 'rules' });
    assert.deepEqual(await e.score('old_fenn', c, false), { score: 1, source: 'rules' });
    assert.deepEqual(await e.score('captain_lysa', c, false), { score: 0.2, source: 'default' });
  });

  test("a context location overrides the agent's home location", async () => {
    const e = new RelevanceEvaluator({ domain, defaultScore: 0.2 });
    const c = ctx({ global: { player_location: 'forge' }, agents: { bram_smith: { location: 'river' }, old_fenn: { location: 'forge' } } });
    assert.equal((await e.score('bram_smith', c, false)).source, 'default');
    assert.equal((await e.score('old_fenn', c, false)).score, 0.9);
  });

  test('a rule may test the agent itself: its tags (a tag it holds) and its homeLocation, unless its context entry gives them', async () => {
    const rules: DomainSchema['relevanceRules'] = [
      { name: 'guards on alarm', condition: { kind: 'equals', property: 'tags', value: 'guard' }, score: 0.8, agents: [] },
      {
        name: 'the council meets at home',
        condition: { kind: 'same_as', property: 'homeLocation', global: 'meeting_place' },
        score: 0.7,
        agents: [],
      },
      { name: 'tagged at all', condition: { kind: 'truthy', property: 'tags' }, score: 0.3, agents: [] },
    ];
    const e = new RelevanceEvaluator({ domain: { ...domain, relevanceRules: rules }, defaultScore: 0.1 });
    const home = (id: string) => domain.agents[id]!.homeLocation!;
    const c = ctx({
      global: { meeting_place: home('elder_rowan') },
      agents: { tomas_innkeeper: { tags: ['guard'] }, bram_smith: { tags: [] } },
    });
    assert.deepEqual(await e.score('captain_lysa', c, false), { score: 0.8, source: 'rules' }, 'tagged guard in the domain');
    assert.deepEqual(await e.score('tomas_innkeeper', c, false), { score: 0.8, source: 'rules' }, 'the context entry gives its own tags');
    assert.deepEqual(await e.score('elder_rowan', c, false), { score: 0.7, source: 'rules' }, 'its home is the meeting place');
    assert.deepEqual(
      await e.score('mira_herbalist', c, false),
      { score: 0.3, source: 'rules' },
      'a tag, so truthy; not a guard, not at home',
    );
    assert.deepEqual(await e.score('bram_smith', c, false), { score: 0.1, source: 'default' }, 'an empty list is not truthy');
  });

  test('an explicit relevance wins over the module, the rules and the agent', async () => {
    const e = new RelevanceEvaluator({ domain, defaultScore: 0.2, module: { evaluate: () => 0.1 }, askAgent: async () => 0.3 });
    assert.deepEqual(await e.score('bram_smith', ctx({ agents: { bram_smith: { relevance: 0.55, in_party: true } } }), true), {
      score: 0.55,
      source: 'forced',
    });
  });

  test('the module comes before the rules, and passing (undefined) falls through to them', async () => {
    const e = new RelevanceEvaluator({
      domain,
      defaultScore: 0.2,
      module: { evaluate: ({ id }) => (id === 'bram_smith' ? 0.33 : undefined) },
    });
    const c = ctx({ agents: { bram_smith: { in_party: true }, old_fenn: { in_party: true } } });
    assert.deepEqual(await e.score('bram_smith', c, false), { score: 0.33, source: 'module' });
    assert.deepEqual(await e.score('old_fenn', c, false), { score: 1, source: 'rules' });
  });

  test('a running agent is asked only when the module and the rules give nothing; a dormant one never', async () => {
    const asked: string[] = [];
    const e = new RelevanceEvaluator({ domain, defaultScore: 0.2, askAgent: async (id) => (asked.push(id), 0.45) });
    const c = ctx({ agents: { old_fenn: { in_party: true } } });
    assert.deepEqual(await e.score('captain_lysa', c, true), { score: 0.45, source: 'agent' });
    assert.deepEqual(await e.score('old_fenn', c, true), { score: 1, source: 'rules' });
    assert.deepEqual(await e.score('tomas_innkeeper', c, false), { score: 0.2, source: 'default' });
    assert.deepEqual(asked, ['captain_lysa']);
  });

  test('a module that returns out of range or throws is an INVALID_INPUT error naming the agent', async () => {
    for (const evaluate of [
      () => 1.5,
      () => 'high',
      () => Number.NaN,
      () => {
        throw new Error('boom');
      },
    ]) {
      const e = new RelevanceEvaluator({ domain, defaultScore: 0.2, module: { evaluate: evaluate as () => number } });
      await assert.rejects(
        e.score('bram_smith', ctx({}), false),
        (err: unknown) => isThymosError(err, 'INVALID_INPUT') && /bram_smith/.test(err.message),
      );
    }
  });

  test('loadModule loads an application module and refuses one without evaluate', async () => {
    const dir = tempDir('thymos-rel-');
    writeFileSync(join(dir, 'good.mjs'), 'export function evaluate({ global }) { return global.alarm ? 1 : undefined; }\n');
    writeFileSync(join(dir, 'bad.mjs'), 'export const evaluate = 3;\n');
    const mod = await RelevanceEvaluator.loadModule(join(dir, 'good.mjs'));
    const e = new RelevanceEvaluator({ domain, defaultScore: 0.2, module: mod });
    assert.deepEqual(await e.score('old_fenn', ctx({ global: { alarm: true } }), false), { score: 1, source: 'module' });
    await assert.rejects(
      RelevanceEvaluator.loadModule(join(dir, 'bad.mjs')),
      (err: unknown) => isThymosError(err, 'CONFIG_INVALID') && /supervisor\.relevance/.test(err.message),
    );
    await assert.rejects(RelevanceEvaluator.loadModule(join(dir, 'missing.mjs')), (err: unknown) => isThymosError(err, 'CONFIG_INVALID'));
  });

  test('scoreAll gives what score gives, agent by agent, and an error entry for an agent the module fails on', async () => {
    const module = { evaluate: ({ id }: { id: string }) => (id === 'tomas_innkeeper' ? 7 : id === 'old_fenn' ? 0.3 : undefined) };
    const c = ctx({
      global: { player_location: 'forge' },
      agents: { mira_herbalist: { relevance: 0.8 }, elder_rowan: { in_party: true } },
    });
    for (const withModule of [false, true]) {
      const e = new RelevanceEvaluator({
        domain,
        defaultScore: 0.2,
        module: withModule ? module : undefined,
        askAgent: async (id) => (id === 'captain_lysa' ? 0.45 : undefined),
      });
      const agents = Object.keys(domain.agents).map((id, i) => ({ id, running: i % 2 === 0 }));
      const all = await e.scoreAll(agents, c);
      for (const { id, running } of agents) {
        const one = await e.score(id, c, running).catch((err: unknown) => err);
        if (isThymosError(one)) assert.equal((all.get(id) as Error).message, one.message, id);
        else assert.deepEqual(all.get(id), one, id);
      }
      if (withModule) assert.ok(isThymosError(all.get('tomas_innkeeper'), 'INVALID_INPUT'));
    }
  });
});

describe('context properties nothing reads', () => {
  const typos = {
    global: { player_loction: 'forge' },
    agents: { bram_smith: { in_pary: true, location: 'forge', relevance: 0.5 }, mira_herbalist: { active_quest: true } },
  };

  test('a property no rule uses and nothing declares is a warning naming its path and the likely meant one; strict makes them INVALID_CONTEXT', () => {
    const e = new RelevanceEvaluator({ domain, defaultScore: 0.2 });
    assert.deepEqual(e.checkContext(ctx(typos)), [
      'context: global.player_loction: no relevance rule uses "player_loction" and contextProperties.global does not declare it, so it changes no score (did you mean player_location?)',
      'context: agents.bram_smith.in_pary: no relevance rule uses "in_pary" and contextProperties.agent does not declare it, so it changes no score (did you mean in_party?)',
    ]);
    assert.deepEqual(
      e.checkContext(ctx({ global: { player_location: 'forge' }, agents: { bram_smith: { in_party: true, ticks_since_talk: 1 } } })),
      [],
      'what the rules use, and location and relevance, pass',
    );
    assert.throws(
      () => e.checkContext(ctx(typos), true),
      (err) => isThymosError(err, 'INVALID_CONTEXT') && /player_loction.*in_pary.*--strict makes these errors/.test(err.message),
    );
    assert.throws(
      () => e.checkContext(ctx({ agents: { nobody: {} } })),
      (err) => isThymosError(err, 'INVALID_CONTEXT') && /agents\.nobody: no agent "nobody"/.test(err.message),
    );
  });

  test('a module that does not say what it reads turns the check off; one that exports contextProperties adds to what is known', () => {
    const silent = new RelevanceEvaluator({ domain, defaultScore: 0.2, module: { evaluate: () => undefined } });
    assert.deepEqual(silent.checkContext(ctx(typos)), []);
    const saying = new RelevanceEvaluator({
      domain,
      defaultScore: 0.2,
      module: { evaluate: () => undefined, contextProperties: { global: ['player_loction'] } },
    });
    assert.deepEqual(
      saying.checkContext(ctx(typos)).map((w) => w.split(':')[1]!.trim()),
      ['agents.bram_smith.in_pary'],
    );
  });

  test('loadModule keeps the contextProperties a module exports and refuses ones of the wrong shape', async () => {
    const dir = tempDir('thymos-relevance-');
    writeFileSync(
      join(dir, 'ok.mjs'),
      'export const contextProperties = { global: ["alarm"] };\nexport function evaluate() { return undefined; }\n',
    );
    writeFileSync(
      join(dir, 'bad.mjs'),
      'export const contextProperties = { global: "alarm" };\nexport function evaluate() { return undefined; }\n',
    );
    assert.deepEqual((await RelevanceEvaluator.loadModule(join(dir, 'ok.mjs'))).contextProperties, { global: ['alarm'] });
    await assert.rejects(
      RelevanceEvaluator.loadModule(join(dir, 'bad.mjs')),
      (err) =>
        isThymosError(err, 'CONFIG_INVALID') &&
        /contextProperties that are not \{ agent\?: string\[\], global\?: string\[\] \}.*global/.test(err.message),
    );
  });
});
