import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { personaPrompt } from '../../../agent/llm/persona-prompt.js';
import { loadDomainSchema, parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { backoffAfter, queueSkills, workOf } from '../../../shared/domain/queue-schema.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { REPO_ROOT, VILLAGE_SCHEMA } from '../../helpers/workspace.js';

function world(body: string): string {
  const dir = tempDir('thymos-pkl-');
  const file = join(dir, 'world.pkl');
  writeFileSync(file, `amends ${JSON.stringify(join(REPO_ROOT, 'schemas/Thymos.pkl'))}\n${body}\n`);
  return file;
}

describe('Pkl domain schema', () => {
  test('the village amends the base module and evaluates to six agents with personas and rules', async () => {
    const domain = await loadDomainSchema(VILLAGE_SCHEMA);
    assert.deepEqual(Object.keys(domain.agents).sort(), [
      'bram_smith',
      'captain_lysa',
      'elder_rowan',
      'mira_herbalist',
      'old_fenn',
      'tomas_innkeeper',
    ]);
    const rowan = domain.agents.elder_rowan!;
    assert.equal(rowan.persona.name, 'Elder Rowan');
    assert.equal(rowan.homeLocation, 'village_square');
    assert.deepEqual(rowan.aliases, ['the old badger', 'the elder']);
    assert.deepEqual(
      domain.relevanceRules.map((r) => r.condition.kind),
      ['same_as', 'truthy', 'at_most', 'truthy'],
    );
    assert.equal(domain.relationshipTypes.knows?.symmetric, true);
    assert.ok(Object.isFrozen(domain.agents));
  });

  test("Pkl's own error, with the application's file and line, reaches the user", async () => {
    const file = world('agents {\n  ["Bad Id"] { persona { name = "x" } }\n}');
    await assert.rejects(loadDomainSchema(file), (err: unknown) => {
      assert.ok(isThymosError(err, 'SCHEMA_INVALID'));
      assert.match(err.message, /Type constraint .* violated/);
      assert.deepEqual(err.location, { file, line: 3 }, 'line 3: the amends line comes first');
      return true;
    });
  });

  test('a relevance score outside 0..1 is refused by the base module', async () => {
    const file = world('relevanceRules { new { name = "x"; condition = new PropertyTrue { property = "p" }; score = 2 } }');
    await assert.rejects(loadDomainSchema(file), (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && /isBetween/.test(err.message));
  });

  test('JSON that bypasses Pkl is still validated, naming the path', () => {
    assert.throws(
      () => parseDomainSchema({ agents: { elder_rowan: { persona: { name: '' } } } }, 'x.json'),
      (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && /agents\.elder_rowan\.persona\.name/.test(err.message),
    );
  });

  test('world tables and watches are declared in Pkl and checked against each other', async () => {
    const domain = await loadDomainSchema(VILLAGE_SCHEMA);
    assert.deepEqual(Object.keys(domain.worldTables), ['quest', 'place']);
    assert.equal(domain.worldTables.quest!.fields.reward!.type, 'number');
    assert.deepEqual(domain.worldWatches[0], {
      table: 'place',
      where: [{ field: 'danger', op: '>=', value: 3 }],
      agents: [],
      agentTags: ['guard'],
    });

    const cases: Array<[unknown, RegExp]> = [
      [{ worldTables: { agent: { fields: {} } } }, /worldTables\.agent: agent is kept by Thymos/],
      [
        { worldTables: { quest: { fields: { updated_by: {} } } } },
        /worldTables\.quest\.fields\.updated_by: every row already has id, updated_at, updated_by/,
      ],
      [{ worldTables: { Quest: {} } }, /expected a world name/],
      [
        { worldTables: { quest: { fields: { title: {} } } }, worldWatches: [{ table: 'quests' }] },
        /worldWatches\.0: worldWatches\.0\.table: no world table "quests"; the domain declares quest/,
      ],
      [
        { worldTables: { quest: { fields: { title: {} } } }, worldWatches: [{ table: 'quest', where: [{ field: 'reward', value: 1 }] }] },
        /worldWatches\.0\.where\.0\.field: table quest has no field "reward"/,
      ],
      [
        {
          worldTables: { quest: { fields: { reward: { type: 'number' } } } },
          worldWatches: [{ table: 'quest', where: [{ field: 'reward', value: 'lots' }] }],
        },
        /where\.0\.value: expected number; got "lots"/,
      ],
    ];
    for (const [raw, pattern] of cases) {
      assert.throws(
        () => parseDomainSchema(raw, 'x.json'),
        (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && pattern.test(err.message),
        JSON.stringify(raw),
      );
    }
    const file = world('worldTables { ["quest"] { fields { ["title"] { type = "text" } } } }');
    await assert.rejects(loadDomainSchema(file), (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && /"text"/.test(err.message));
  });

  test('named search strategies: declared in Pkl, not shadowing a method, and an agent names a declared one', async () => {
    const domain = await loadDomainSchema(VILLAGE_SCHEMA);
    assert.deepEqual(domain.searchStrategies.by_meaning, { method: 'hybrid', semanticWeight: 0.8 });
    const elder = { persona: { name: 'Elder Rowan' } };
    const cases: Array<[unknown, RegExp]> = [
      [{ searchStrategies: { hybrid: { method: 'vector' } } }, /searchStrategies\.hybrid: hybrid is a search method already/],
      [{ searchStrategies: { deep: { method: 'sideways' } } }, /searchStrategies\.deep\.method/],
      [{ searchStrategies: { deep: { semanticWeight: 2 } } }, /searchStrategies\.deep\.semanticWeight/],
      [
        { agents: { elder_rowan: { ...elder, searchStrategy: 'deep' } } },
        /agents\.elder_rowan\.searchStrategy: expected bm25, vector, hybrid, cascade; got "deep"/,
      ],
    ];
    for (const [raw, pattern] of cases) {
      assert.throws(
        () => parseDomainSchema(raw, 'x.json'),
        (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && pattern.test(err.message),
        JSON.stringify(raw),
      );
    }
    const ok = parseDomainSchema({
      agents: { elder_rowan: { ...elder, searchStrategy: 'deep' } },
      searchStrategies: { deep: { method: 'hybrid' } },
    });
    assert.equal(ok.agents.elder_rowan!.searchStrategy, 'deep');
    const file = world('searchStrategies { ["deep"] { method = "sideways" } }');
    await assert.rejects(loadDomainSchema(file), (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && /sideways/.test(err.message));
    assert.deepEqual(
      (await loadDomainSchema(world('searchStrategies { ["exact_first"] { method = "cascade" } }'))).searchStrategies.exact_first,
      { method: 'cascade' },
    );
  });
});

describe('the persona prompt template', () => {
  test("the village's prompts.persona is filled in for each agent, and the model's persona prompt starts with it", async () => {
    const domain = await loadDomainSchema(VILLAGE_SCHEMA);
    const bram = domain.agents.bram_smith!.persona;
    assert.equal(bram.prompt, `You are ${bram.name}. You are ${bram.traits.join(', ')}. You speak in a ${bram.speechStyle} way.`);
    const text = personaPrompt(bram, 'Right now: at the forge');
    assert.ok(text.startsWith(`${bram.prompt}\nBackground: ${bram.background}\nRight now: at the forge\n`), text);
  });

  test('a template with {background} keeps it where it is; without prompts the built-in lines stay', () => {
    const agents = { ana: { persona: { name: 'Ana', traits: ['wry'], background: 'Keeps bees.' } } };
    const filled = parseDomainSchema({ agents, prompts: { persona: '{name} ({traits}): {background}' } }).agents.ana!.persona;
    assert.equal(filled.prompt, 'Ana (wry): Keeps bees.');
    assert.equal(personaPrompt(filled).split('\n')[0], 'Ana (wry): Keeps bees.');
    assert.doesNotMatch(personaPrompt(filled), /Background:/);
    const plain = parseDomainSchema({ agents }).agents.ana!.persona;
    assert.equal(plain.prompt, undefined);
    assert.match(personaPrompt(plain), /^You are Ana\.\nYou are wry\.\nYou speak in a plain way\.\nBackground: Keeps bees\./);
  });

  test('an unknown placeholder or prompt name is SCHEMA_INVALID naming what is known', () => {
    assert.throws(
      () => parseDomainSchema({ prompts: { persona: 'You are {nmae}.' } }, 'w.pkl'),
      (e) =>
        isThymosError(e, 'SCHEMA_INVALID') &&
        /prompts\.persona: unknown placeholder \{nmae\}; expected \{name\}, \{traits\}, \{speechStyle\}, \{background\}/.test(e.message),
    );
    assert.throws(
      () => parseDomainSchema({ prompts: { greeting: 'Hi' } }, 'w.pkl'),
      (e) => isThymosError(e, 'SCHEMA_INVALID') && /prompts.*greeting/.test(e.message),
    );
  });

  test('work queues and skills: declared in Pkl with their defaults, and an agent serves only declared queues, with a skill', async () => {
    const file = world(`queues { ["support"] { maxDeliver = 3; backoffMs { 10; 20 } } ["ops"] {} }
agents { ["desk"] { persona { name = "Desk" }; skills { "billing"; "shipping" }; queues { "support" } } ["any"] { persona { name = "Any" }; skills { "billing"; "triage" } } }`);
    const domain = await loadDomainSchema(file);
    assert.deepEqual(domain.queues.support, { maxDeliver: 3, backoffMs: [10, 20], ackWaitMs: 60_000, maxWorkMs: 600_000 });
    assert.deepEqual(domain.queues.ops, { maxDeliver: 5, backoffMs: [1000, 5000, 30_000], ackWaitMs: 60_000, maxWorkMs: 600_000 });
    assert.deepEqual(
      [1, 2, 3, 9].map((n) => backoffAfter(domain.queues.support!, n)),
      [10, 20, 20, 20],
    );
    assert.deepEqual(
      workOf(domain.agents.desk!, domain.queues).map((w) => `${w.queue}/${w.skill}`),
      ['support/billing', 'support/shipping'],
    );
    assert.deepEqual(
      workOf(domain.agents.any!, domain.queues).map((w) => `${w.queue}/${w.skill}`),
      ['support/billing', 'support/triage', 'ops/billing', 'ops/triage'],
    );
    assert.deepEqual(
      queueSkills(domain),
      new Map([
        ['support', ['billing', 'shipping', 'triage']],
        ['ops', ['billing', 'triage']],
      ]),
    );
    const desk = { persona: { name: 'Desk' } };
    const cases: Array<[unknown, RegExp]> = [
      [
        { queues: { support: {} }, agents: { desk: { ...desk, skills: ['billing'], queues: ['suport'] } } },
        /agents\.desk\.queues: no queue "suport"; expected one of support/,
      ],
      [
        { queues: { support: {} }, agents: { desk: { ...desk, queues: ['support'] } } },
        /agents\.desk\.skills: it serves queues but has no skills/,
      ],
      [{ queues: { dead: {} } }, /queues\.dead.*"dead" names where dead letters live/],
      [{ queues: { Support: {} } }, /queues.*lower-case letters/],
      [{ agents: { desk: { ...desk, skills: ['Bill ing'] } } }, /agents\.desk\.skills\.0/],
      [{ queues: { support: { maxDeliver: 0 } } }, /queues\.support\.maxDeliver/],
      [{ queues: { support: { retries: 2 } } }, /queues\.support.*retries/],
    ];
    for (const [raw, pattern] of cases) {
      assert.throws(
        () => parseDomainSchema(raw, 'x.json'),
        (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && pattern.test(err.message),
        JSON.stringify(raw),
      );
    }
    await assert.rejects(loadDomainSchema(world('queues { ["dead"] {} }')), (err: unknown) => isThymosError(err, 'SCHEMA_INVALID'));
  });
});
