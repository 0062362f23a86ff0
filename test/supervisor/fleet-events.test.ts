import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect, type Fleet } from '../../client/fleet-client.js';
import { isThymosError } from '../../shared/errors.js';
import { loadConfig } from '../../shared/thymos-config.js';
import { downFleet, upFleet } from '../../supervisor/fleet-launcher.js';
import { eventually, killFleet, runThymos } from '../helpers/fleet.js';
import { createWorkspace, type Workspace } from '../helpers/workspace.js';

let ws: Workspace;
let fleet: Fleet;

const text = (r: unknown) => ((r as { content: Array<{ text: string }> }).content.map((c) => c.text).join('\n'));
const memoryCount = async (id: string) => (JSON.parse(text(await (await fleet.agent(id)).callTool({ name: `get_${id}_state`, arguments: {} }))) as { memory_count: number }).memory_count;
const recall = async (id: string, query: string, k = 100) => text(await (await fleet.agent(id)).callTool({ name: `query_${id}_knowledge`, arguments: { query, k } }));
const counts = async (ids: string[]) => Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await memoryCount(id)] as const)));
const running = { tomas_innkeeper: { relevance: 1 }, bram_smith: { relevance: 1 }, elder_rowan: { relevance: 1 }, mira_herbalist: { relevance: 0.5 } };
const IDS = Object.keys(running);

describe('world events over JetStream', () => {
  before(async () => {
    ws = createWorkspace({ extra: ['[lifecycle]', 'min_dwell_ms = 0'].join('\n') });
    const config = loadConfig(ws.configPath);
    await upFleet(config);
    fleet = await connect(config);
    const report = await fleet.reconcile({ agents: running });
    assert.deepEqual(report.failed, []);
  });

  after(async () => {
    await fleet?.close().catch(() => undefined);
    await downFleet(loadConfig(ws.configPath)).catch(() => undefined);
    await killFleet(join(ws.dir, 'data'));
    ws.dispose();
  });

  test('a tavern event reaches exactly the agents whose filters match; a Listening agent hears too', async () => {
    const before = await counts(IDS);
    await fleet.publish({ type: 'tavern.brawl', location: 'tavern', mentions: ['Bram'], payload: { summary: 'A brawl broke out at the Drowned Lantern' } });
    await fleet.publish({ type: 'garden.blight', location: 'herb_garden', payload: { summary: 'Grey blight spreads among the silverleaf' } });
    const expected = { tomas_innkeeper: 1, bram_smith: 1, elder_rowan: 0, mira_herbalist: 1 };
    const delta = await eventually(async () => {
      const now = await counts(IDS);
      const d = Object.fromEntries(IDS.map((id) => [id, now[id]! - before[id]!]));
      return JSON.stringify(d) === JSON.stringify(expected) ? d : undefined;
    }, 10_000, 'memories of the events');
    assert.deepEqual(delta, expected);
    assert.match(await recall('bram_smith', 'brawl'), /A brawl broke out at the Drowned Lantern \(tavern\.brawl at tavern\)/);
    assert.match(await recall('mira_herbalist', 'blight'), /Grey blight spreads/);
    assert.doesNotMatch(await recall('elder_rowan', 'brawl'), /Drowned Lantern/);
  });

  test('a Dormant agent replays the 100 events it missed when it wakes, and a second restart duplicates none', async () => {
    const base = await memoryCount('elder_rowan');
    assert.deepEqual((await fleet.stop('elder_rowan')).stopped, ['elder_rowan']);
    for (let i = 0; i < 100; i++) {
      await fleet.publish({ id: `motion-${i}`, type: 'council.vote', tags: ['council'], payload: { summary: `Council motion ${i} carried` } });
    }
    await fleet.publish({ id: 'motion-0', type: 'council.vote', tags: ['council'], payload: { summary: 'Council motion 0 carried' } }); // a duplicate id: dropped
    assert.deepEqual((await fleet.start('elder_rowan')).started, ['elder_rowan']);
    assert.equal(await memoryCount('elder_rowan'), base + 100, 'heard before it said ready');
    const found = (await recall('elder_rowan', 'council motion carried', 100)).match(/Council motion \d+ carried/g) ?? [];
    assert.equal(new Set(found).size, 100);
    await fleet.stop('elder_rowan');
    await fleet.start('elder_rowan');
    assert.equal(await memoryCount('elder_rowan'), base + 100, 'no duplicates after another restart');
  });

  test('an Archived agent stops retaining events; restored, it hears only what comes after', async () => {
    await fleet.reconcile({ agents: { ...running, old_fenn: { relevance: 1 } } });
    const before = await memoryCount('old_fenn');
    await fleet.reconcile({ agents: { ...running, old_fenn: { relevance: 0.01 } } });
    await fleet.publish({ type: 'river.flood', location: 'river', payload: { summary: 'The river burst its banks while Fenn was away' } });
    await fleet.reconcile({ agents: { ...running, old_fenn: { relevance: 1 } } });
    assert.equal(await memoryCount('old_fenn'), before, 'nothing kept while archived');
    await fleet.publish({ type: 'river.fish', location: 'river', payload: { summary: 'A great pike was caught at the weir' } });
    await eventually(async () => ((await memoryCount('old_fenn')) === before + 1 ? true : undefined), 10_000, 'the new event');
  });

  test('event text carrying SurrealQL is stored as text and changes nothing else', async () => {
    const before = await memoryCount('tomas_innkeeper');
    const evil = "x'; DELETE memory; REMOVE TABLE memory; --";
    await fleet.publish({ type: 'tavern.rumour', location: 'tavern', tags: ["'; DROP"], payload: { summary: evil } });
    await eventually(async () => ((await memoryCount('tomas_innkeeper')) === before + 1 ? true : undefined), 10_000, 'the rumour');
    assert.match(await recall('tomas_innkeeper', 'DELETE memory REMOVE TABLE'), /DELETE memory; REMOVE TABLE memory/);
  });

  test('an invalid event is refused with INVALID_INPUT naming the field, from the library and the CLI (exit 2)', async () => {
    await assert.rejects(fleet.publish({ type: 'Tavern Brawl' }), (err: unknown) => isThymosError(err, 'INVALID_INPUT') && /type/.test(err.message));
    await assert.rejects(fleet.publish({ type: 'x', tags: 'a' as unknown as string[] }), (err: unknown) => isThymosError(err, 'INVALID_INPUT') && /tags/.test(err.message));
    const ok = await runThymos(['publish', 'tavern.song', '{"summary":"A song about the old mill"}', '--location', 'tavern', '--json'], ws.dir);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /"seq":\d+/);
    const bad = await runThymos(['publish', 'tavern.song', '{not json'], ws.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /USAGE: payload: expected a JSON object/);
    const badType = await runThymos(['publish', 'Bad Type'], ws.dir);
    assert.equal(badType.code, 2);
    assert.match(badType.stderr, /INVALID_INPUT: event: type:/);
  });
});
