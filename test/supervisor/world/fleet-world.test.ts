import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { Fleet } from '../../../client/fleet-client.js';
import { ErrorCode, type ThymosError } from '../../../shared/errors/errors.js';
import type { WorldChange } from '../../../shared/protocol/world-protocol.js';
import { eventually, runThymos, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import type { Workspace } from '../../helpers/workspace.js';

let ws: Workspace;
let fleet: Fleet;
let testFleet: TestFleet | undefined;

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content.map((c) => c.text).join('\n');
const recall = async (id: string, query: string, k = 50) =>
  text(await (await fleet.agent(id)).callTool({ name: `query_${id}_knowledge`, arguments: { query, k } }));
const until = (condition: () => Promise<boolean> | boolean, ms: number, what: string) =>
  eventually(async () => (await condition()) || undefined, ms, what);

// The village declares `quest` and `place`; the guard (captain_lysa) watches dangerous places,
// the innkeeper watches open quests, the smith watches nothing.
describe('the shared world store in a running fleet', () => {
  before(async () => {
    // Tokens on: the supervisor's probe, connect() and the CLI must bring each agent's token.
    testFleet = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[world]', 'lease_ms = 2000', '[mcp]', 'require_token = true']);
    ({ ws, fleet } = testFleet);
    const report = await fleet.reconcile({
      agents: { captain_lysa: { relevance: 1 }, tomas_innkeeper: { relevance: 0.5 }, bram_smith: { relevance: 1 } },
    });
    assert.deepEqual(report.failed, []);
  });

  after(async () => {
    await testFleet?.dispose();
  });

  test('a live query on a world table reaches the agents that watch it and no other', async () => {
    await fleet.world.set('place', 'mill', { name: 'The mill', danger: 4 });
    await fleet.world.set('place', 'orchard', { name: 'The orchard', danger: 0 });
    await fleet.world.set('quest', 'wolves', { title: 'Drive off the wolves', status: 'open', giver: 'captain_lysa', reward: 30 });
    await fleet.world.patch('place', 'mill', { danger: 6 });

    await until(
      async () => /place mill changed \(name: The mill; danger: 6\)/.test(await recall('captain_lysa', 'mill danger')),
      10_000,
      'the guard remembering the update',
    );
    const guard = await recall('captain_lysa', 'mill orchard danger place');
    assert.match(guard, /place mill appeared \(name: The mill; danger: 4\), by app/);
    assert.doesNotMatch(guard, /orchard/, 'a safe place does not match the guard’s watch');
    assert.doesNotMatch(guard, /wolves/);

    // The innkeeper listens (passive mode) and still notices.
    await until(
      async () => /quest wolves appeared/.test(await recall('tomas_innkeeper', 'quest wolves')),
      10_000,
      'the innkeeper remembering the quest',
    );
    assert.doesNotMatch(await recall('tomas_innkeeper', 'mill danger'), /place mill/);
    assert.doesNotMatch(
      await recall('bram_smith', 'mill wolves quest place danger'),
      /place mill|quest wolves/,
      'the smith watches nothing',
    );
  });

  test('agents and the game loop read the world with structured queries; SurrealQL in values is inert', async () => {
    const bram = await fleet.agent('bram_smith');
    const open = await bram.callTool({ name: 'query_world', arguments: { table: 'quest', where: [{ field: 'status', value: 'open' }] } });
    assert.deepEqual(
      (open.structuredContent as { rows: Array<{ id: string }> }).rows.map((r) => r.id),
      ['wolves'],
    );
    const evil = await bram.callTool({
      name: 'query_world',
      arguments: { table: 'quest', where: [{ field: 'status', value: "open' OR true; DELETE quest; --" }] },
    });
    assert.deepEqual((evil.structuredContent as { rows: unknown[] }).rows, []);
    const bad = await bram.callTool({
      name: 'query_world',
      arguments: { table: 'quest', where: [{ field: 'title; DELETE quest', value: 'x' }] },
    });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /has no field/);
    assert.equal((await fleet.world.get('quest', 'wolves'))?.title, 'Drive off the wolves', 'still there');

    const places = await fleet.world.query({ table: 'place', order_by: { field: 'danger', direction: 'desc' } });
    assert.deepEqual(
      places.map((p) => [p.id, p.danger]),
      [
        ['mill', 6],
        ['orchard', 0],
      ],
    );
  });

  test('the CLI gets, sets and queries the world, with usage errors named', async () => {
    const set = await runThymos(
      ['world', 'set', 'quest', 'herbs', JSON.stringify({ title: 'Gather silverleaf', status: 'open', reward: 5 })],
      ws.dir,
    );
    assert.equal(set.code, 0, set.stderr);
    const get = await runThymos(['world', 'get', 'quest', 'herbs', '--json'], ws.dir);
    assert.equal(get.code, 0, get.stderr);
    assert.equal((JSON.parse(get.stdout) as { title: string }).title, 'Gather silverleaf');
    const query = await runThymos(['world', 'query', 'quest', '--where', 'status=open', '--where', 'reward>=10', '--json'], ws.dir);
    assert.equal(query.code, 0, query.stderr);
    assert.deepEqual(
      (JSON.parse(query.stdout) as Array<{ id: string }>).map((r) => r.id),
      ['wolves'],
    );
    const table = await runThymos(['world', 'query', 'quest', '--order', 'reward:desc'], ws.dir);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /wolves[\s\S]*herbs/);
    const badField = await runThymos(['world', 'query', 'quest', '--where', 'nope=1'], ws.dir);
    assert.equal(badField.code, 2);
    assert.match(badField.stderr, /INVALID_INPUT.*table quest has no field "nope"/);
    const badJson = await runThymos(['world', 'set', 'quest', 'x', '{title'], ws.dir);
    assert.equal(badJson.code, 2);
    assert.match(badJson.stderr, /fields.*JSON/);
    const del = await runThymos(['world', 'delete', 'quest', 'herbs'], ws.dir);
    assert.equal(del.code, 0, del.stderr);
    assert.equal(await fleet.world.get('quest', 'herbs'), null);
  });

  test('live subscriptions survive a supervisor killed with -9, and end with the agent that owns them', async () => {
    const seen: WorldChange[] = [];
    const sub = await fleet.world.subscribe({ table: 'quest', where: [{ field: 'giver', value: 'elder_rowan' }] }, (c) => seen.push(c));
    const status = await fleet.status();
    process.kill(status.supervisor.pid, 'SIGKILL');
    await eventually(
      async () => {
        const s = await fleet.status();
        return s.supervisor.pid !== status.supervisor.pid ? s : undefined;
      },
      30_000,
      'a new supervisor',
    );

    await fleet.world.set('quest', 'ledger', { title: 'Find the lost ledger', status: 'open', giver: 'elder_rowan' });
    await fleet.world.set('quest', 'fence', { title: 'Mend the fence', status: 'open', giver: 'bram_smith' });
    await fleet.world.set('place', 'bridge', { name: 'The bridge', danger: 5 });
    await until(() => seen.length >= 1, 10_000, 'the game loop’s notification after the restart');
    assert.deepEqual(
      seen.map((c) => [c.action, c.id]),
      [['create', 'ledger']],
    );
    assert.equal(seen[0]!.sub, sub.sub);
    // The agents' watches were restarted too.
    await until(async () => /place bridge appeared/.test(await recall('captain_lysa', 'bridge')), 10_000, 'the guard after the restart');
    await until(
      async () => /quest fence appeared/.test(await recall('tomas_innkeeper', 'fence')),
      10_000,
      'the innkeeper after the restart',
    );

    // Dormant: the guard's subscription ends; what happens meanwhile is not remembered by it.
    assert.deepEqual((await fleet.stop('captain_lysa')).stopped, ['captain_lysa']);
    await fleet.world.set('place', 'well', { name: 'The well', danger: 7 });
    await fleet.start('captain_lysa');
    await fleet.world.set('place', 'gate', { name: 'The gate', danger: 8 });
    await until(async () => /place gate appeared/.test(await recall('captain_lysa', 'gate')), 10_000, 'the guard after waking');
    assert.doesNotMatch(await recall('captain_lysa', 'well'), /place well/, 'a live query is live: changes while Dormant are not replayed');
    await sub.close();
  });

  test('with mcp.require_token, an agent refuses a request without its token; the library and thymos call bring it', async () => {
    const status = await fleet.status();
    const bram = status.agents.find((a) => a.id === 'bram_smith' && a.port !== null);
    assert.ok(bram, JSON.stringify(status.agents));
    const bare = await fetch(`http://127.0.0.1:${bram.port}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    assert.equal(bare.status, 401);
    const called = await runThymos(['call', 'bram_smith', 'get_bram_smith_state', '{}'], ws.dir);
    assert.equal(called.code, 0, called.stderr);
    assert.match(called.stdout, /bram_smith/);
  });

  test('bad world requests from the library are refused by name', async () => {
    await assert.rejects(
      fleet.world.set('dragon', 'x', {}),
      (e: ThymosError) => e.code === ErrorCode.INVALID_INPUT && /no world table "dragon"; the domain declares quest, place/.test(e.message),
    );
    await assert.rejects(
      fleet.world.set('quest', 'x', { title: 3 }),
      (e: ThymosError) => e.code === ErrorCode.INVALID_INPUT && /title/.test(e.message),
    );
    await assert.rejects(
      fleet.world.subscribe({ table: 'quest', where: [{ field: 'party', value: 'x' }] }, () => undefined),
      (e: ThymosError) => /use contains/.test(e.message),
    );
  });
});
