import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Surreal } from 'surrealdb';

import { parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { openEmbeddedSurreal, openRemoteSurreal } from '../../../shared/engines/embedded-surreal.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { ErrorCode, type ThymosError } from '../../../shared/errors/errors.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { WorldClient } from '../../../shared/nats/world-client.js';
import type { WorldChange } from '../../../shared/protocol/world-protocol.js';
import { worldControlApi } from '../../../supervisor/world/world-api.js';
import { WorldStore } from '../../../supervisor/world/world-store.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
/** Waits until `condition` holds. */
const until = (condition: () => boolean, ms: number, what: string) => eventually(() => condition() || undefined, ms, what);

const DOMAIN = parseDomainSchema({
  worldTables: {
    quest: {
      fields: {
        title: { type: 'string', required: true },
        status: { type: 'string', allowedValues: ['open', 'taken', 'done'] },
        reward: { type: 'number' },
        location: { type: 'string' },
        party: { type: 'strings' },
        secret: { type: 'boolean' },
      },
    },
    location: { fields: { name: { type: 'string', required: true }, danger: { type: 'number' } } },
  },
});

const logger = createLogger({ level: 'silent' });

describe('world store over NATS (real nats-server, embedded SurrealDB)', () => {
  let nats: TestNatsServer;
  let dir: string;
  let db: Surreal;
  let nc: NatsConnection;
  let store: WorldStore;
  let api: ReturnType<typeof worldControlApi>;
  let app: WorldClient;
  let other: WorldClient;

  // A restart reopens the store on the same database: an embedded surrealkv path cannot be
  // opened twice in one process (the fleet test restarts a real supervisor process).
  const openSupervisorSide = async () => {
    store = await WorldStore.open({
      db,
      tables: DOMAIN.worldTables,
      nc,
      leaseMs: 1500,
      maxSubscriptions: 20,
      maxSubscriptionsPerOwner: 12,
      logger,
    });
    api = worldControlApi(nc, store, logger);
    api.start();
    await nc.flush();
  };
  const closeSupervisorSide = async () => {
    api.stop();
    await store.close();
  };

  before(async () => {
    nats = await startNatsServer();
    dir = mkdtempSync(join(tmpdir(), 'thymos-world-'));
    nc = await connectNats({ servers: nats.url, name: 'test-supervisor' });
    db = await openEmbeddedSurreal(join(dir, 'world'), { namespace: 'thymos', database: 'world', timeoutMs: 10_000 });
    await openSupervisorSide();
    app = new WorldClient(await connectNats({ servers: nats.url, name: 'test-app' }), {
      timeoutMs: 5000,
      by: 'app',
      owner: WorldClient.appOwner(),
    });
    other = new WorldClient(await connectNats({ servers: nats.url, name: 'test-agent' }), {
      timeoutMs: 5000,
      by: 'bram_smith',
      owner: 'bram_smith',
    });
  });

  after(async () => {
    await app.close();
    await other.close();
    await closeSupervisorSide();
    await db.close();
    await nc.close();
    await nats.stop();
    // The embedded engine may still be writing its files a moment after it closed: removing them is tried again.
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  });

  test('set, get, patch, query with conditions, order and limit, delete', async () => {
    const row = await app.set('quest', 'wolves', {
      title: 'Clear the wolves',
      status: 'open',
      reward: 50,
      location: 'forest',
      party: ['mira'],
    });
    assert.equal(row.id, 'wolves');
    assert.equal(row.updated_by, 'app');
    assert.ok(row.updated_at > Date.now() - 60_000);
    await app.set('quest', 'well', { title: 'Fix the well', status: 'open', reward: 10, location: 'village_square' });
    await other.set('quest', 'ring', {
      title: 'Find the ring',
      status: 'taken',
      reward: 80,
      location: 'forest',
      party: ['mira', 'bram_smith'],
    });

    assert.deepEqual((await app.get('quest', 'well'))?.title, 'Fix the well');
    assert.equal(await app.get('quest', 'nothing-here'), null);

    const patched = await other.patch('quest', 'well', { status: 'done' });
    assert.equal(patched.status, 'done');
    assert.equal(patched.title, 'Fix the well', 'patch keeps the other fields');
    assert.equal(patched.updated_by, 'bram_smith');

    const forest = await app.query({
      table: 'quest',
      where: [{ field: 'location', value: 'forest' }],
      order_by: { field: 'reward', direction: 'desc' },
    });
    assert.deepEqual(
      forest.map((r) => r.id),
      ['ring', 'wolves'],
    );
    const rich = await app.query({
      table: 'quest',
      where: [
        { field: 'reward', op: '>=', value: 50 },
        { field: 'status', op: '!=', value: 'done' },
      ],
      order_by: { field: 'reward' },
    });
    assert.deepEqual(
      rich.map((r) => r.id),
      ['wolves', 'ring'],
    );
    const withMira = await app.query({ table: 'quest', where: [{ field: 'party', op: 'contains', value: 'bram_smith' }] });
    assert.deepEqual(
      withMira.map((r) => r.id),
      ['ring'],
    );
    const byIds = await app.query({
      table: 'quest',
      where: [{ field: 'id', op: 'in', value: ['well', 'ring', 'missing'] }],
      order_by: { field: 'id' },
    });
    assert.deepEqual(
      byIds.map((r) => r.id),
      ['ring', 'well'],
    );
    const one = await app.query({ table: 'quest', order_by: { field: 'reward', direction: 'desc' }, limit: 1 });
    assert.deepEqual(
      one.map((r) => r.id),
      ['ring'],
    );

    assert.equal(await app.delete('quest', 'well'), true);
    assert.equal(await app.delete('quest', 'well'), false);
    assert.equal(await app.get('quest', 'well'), null);

    await assert.rejects(
      app.patch('quest', 'well', { status: 'open' }),
      (e: ThymosError) => e.code === ErrorCode.NOT_FOUND && /no row "well"/.test(e.message),
    );
    assert.deepEqual(Object.keys(await app.tables()).sort(), ['location', 'quest']);
  });

  test('bad writes and queries are refused by name and change nothing', async () => {
    await app.set('quest', 'keep', { title: 'Keep me', status: 'open', reward: 5 });
    const cases: Array<[() => Promise<unknown>, RegExp]> = [
      [() => app.set('dragon', 'x', { title: 'x' }), /no world table "dragon"; the domain declares quest, location/],
      [() => app.set('agent', 'x', {}), /no world table "agent"/],
      [() => app.set('quest', 'keep', { status: 'open' }), /title/],
      [() => app.set('quest', 'keep', { title: 'x', status: 'lost' }), /status/],
      [() => app.set('quest', 'keep', { title: 'x', reward: 'lots' }), /reward: expected number/],
      [() => app.set('quest', 'keep', { title: 'x', owner: 'me' }), /unknown key "owner"/],
      [() => app.patch('quest', 'keep', { reward: '5; DELETE quest' }), /reward/],
      [() => app.set('quest', '', { title: 'x' }), /id/],
      [() => app.set('quest', 'a\u0000b', { title: 'x' }), /control characters/],
      [
        () => app.query({ table: 'quest', where: [{ field: 'nope', value: 1 }] }),
        /where\.0\.field: table quest has no field "nope"; it declares id, title, status/,
      ],
      [() => app.query({ table: 'quest', where: [{ field: 'reward', value: 'ten' }] }), /where\.0\.value: expected number; got "ten"/],
      [() => app.query({ table: 'quest', where: [{ field: 'party', value: 'mira' }] }), /use contains/],
      [() => app.query({ table: 'quest', where: [{ field: 'status', op: 'in', value: 'open' }] }), /in needs a list/],
      [() => app.query({ table: 'quest', where: [{ field: 'status', op: 'LIKE' as '=', value: 'open' }] }), /op/],
      [() => app.query({ table: 'quest', order_by: { field: 'reward; DELETE quest' } }), /order_by\.field: table quest has no field/],
      [() => app.query({ table: 'quest', limit: 0 }), /limit/],
      [() => app.query({ table: 'quest', limit: 5000 }), /limit/],
      [() => app.query({ table: 'quest; DELETE quest' }), /no world table/],
    ];
    for (const [call, pattern] of cases) {
      await assert.rejects(call(), (e: ThymosError) => {
        assert.equal(e.code, ErrorCode.INVALID_INPUT, `${e.code}: ${e.message}`);
        assert.match(e.message, pattern);
        return true;
      });
    }
    const kept = await app.get('quest', 'keep');
    assert.equal(kept?.title, 'Keep me');
    assert.equal(kept?.reward, 5);
  });

  test('values carrying SurrealQL are inert: stored and matched as text', async () => {
    const evil = "x' OR true; DELETE quest; SELECT * FROM agent WHERE '1'='1";
    await app.set('quest', evil, { title: evil, status: 'open', location: '`location`; REMOVE TABLE quest' });
    const before = (await app.query({ table: 'quest', limit: 1000 })).length;
    assert.deepEqual(await app.query({ table: 'quest', where: [{ field: 'title', value: "x' OR true" }] }), []);
    assert.deepEqual(await app.query({ table: 'quest', where: [{ field: 'location', value: "forest' OR '1'='1" }] }), []);
    const hit = await app.query({ table: 'quest', where: [{ field: 'title', value: evil }] });
    assert.deepEqual(
      hit.map((r) => r.id),
      [evil],
    );
    assert.equal((await app.get('quest', evil))?.location, '`location`; REMOVE TABLE quest');
    assert.equal((await app.query({ table: 'quest', limit: 1000 })).length, before, 'nothing was deleted');
    // Raw requests that bypass the client's checks get the same answer from the supervisor.
    const raw = await nc.request('thymos.world.query', JSON.stringify({ table: 'quest', where: [{ field: 'title) OR (1=1', value: 1 }] }), {
      timeout: 5000,
    });
    const reply = JSON.parse(raw.string()) as { ok: boolean; error?: { code: string; message: string } };
    assert.equal(reply.ok, false);
    assert.equal(reply.error?.code, ErrorCode.INVALID_INPUT);
    assert.match(reply.error!.message, /has no field/);
  });

  test('fuzzed requests get a coded reply and never a crash', async () => {
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;
    const values: unknown[] = [
      null,
      1,
      -1.5,
      'open',
      '',
      "'; DROP",
      [],
      ['a', 2],
      {},
      { $gt: 1 },
      true,
      'x'.repeat(300),
      Number.MAX_SAFE_INTEGER,
    ];
    const ops = ['get', 'set', 'patch', 'delete', 'query', 'subscribe', 'renew', 'unsubscribe'];
    const fields = ['title', 'status', 'reward', 'party', 'id', 'nope', '', 'a.b', '*'];
    for (let i = 0; i < 150; i++) {
      const body: Record<string, unknown> = {};
      if (Math.random() < 0.9) body.table = pick(['quest', 'location', 'agent', 'x', 3, '']);
      if (Math.random() < 0.7) body.id = pick(['a', '', 7, 'fuzzed', null]);
      if (Math.random() < 0.5) body.fields = Object.fromEntries([[pick(fields), pick(values)]]);
      if (Math.random() < 0.5) body.where = [{ field: pick(fields), op: pick(['=', 'in', '>', 'contains', 'x']), value: pick(values) }];
      if (Math.random() < 0.3) body.limit = pick(values);
      if (Math.random() < 0.3) body.owner = pick(['app:x', 'BAD', 'mira']);
      if (Math.random() < 0.2) body.subs = pick([[], ['nope'], 'x']);
      const op = pick(ops);
      const reply = JSON.parse(
        (await nc.request(`thymos.world.${op}`, Math.random() < 0.05 ? '{not json' : JSON.stringify(body), { timeout: 5000 })).string(),
      ) as {
        ok: boolean;
        error?: { code: string };
      };
      if (!reply.ok)
        assert.ok(
          [ErrorCode.INVALID_INPUT, ErrorCode.NOT_FOUND].includes(reply.error!.code as 'INVALID_INPUT'),
          `${op} ${JSON.stringify(body)} → ${JSON.stringify(reply)}`,
        );
    }
    for (const s of store.subscriptions()) await store.unsubscribe(s.sub);
    // No request named it: a row the fuzz never targeted is untouched whatever else it did.
    assert.equal((await app.get('quest', 'keep'))?.title, 'Keep me');
  });

  test('a live query delivers matching inserts, updates and deletes to its subscriber only', async () => {
    const forest: WorldChange[] = [];
    const square: WorldChange[] = [];
    const subForest = await app.subscribe({ table: 'quest', where: [{ field: 'location', value: 'forest' }] }, (c) => forest.push(c));
    const subSquare = await other.subscribe({ table: 'quest', where: [{ field: 'location', value: 'village_square' }] }, (c) =>
      square.push(c),
    );

    await other.set('quest', 'bear', { title: 'The bear', status: 'open', location: 'forest', reward: 20 });
    await other.patch('quest', 'bear', { status: 'taken' });
    await other.set('location', 'forest', { name: 'Old forest' });
    await app.set('quest', 'bread', { title: 'Bake bread', location: 'village_square' });
    await app.delete('quest', 'bear');

    await until(() => forest.length >= 3 && square.length >= 1, 5000, 'live notifications');
    assert.deepEqual(
      forest.map((c) => [c.action, c.id, c.row.status ?? null]),
      [
        ['create', 'bear', 'open'],
        ['update', 'bear', 'taken'],
        ['delete', 'bear', 'taken'],
      ],
    );
    assert.equal(forest[0]!.row.updated_by, 'bram_smith');
    assert.equal(forest[0]!.sub, subForest.sub);
    assert.deepEqual(
      square.map((c) => [c.action, c.id]),
      [['create', 'bread']],
    );

    await subForest.close();
    await app.set('quest', 'owl', { title: 'The owl', location: 'forest' });
    await app.set('quest', 'bread', { title: 'Bake more bread', location: 'village_square' });
    await until(() => square.length >= 2, 5000, 'second square notification');
    assert.equal(forest.length, 3, 'a closed subscription hears nothing more');
    assert.equal(store.subscriptions().length, 1);
    await subSquare.close();
    assert.equal(store.subscriptions().length, 0);
  });

  test('the same owner and key get one subscription; an owner that stops ends its subscriptions', async () => {
    const seen: string[] = [];
    const a = await other.subscribe({ table: 'location' }, (c) => seen.push(`a:${c.id}`), { key: 'watch' });
    const b = await other.subscribe({ table: 'location', where: [{ field: 'danger', op: '>', value: 5 }] }, (c) => seen.push(`b:${c.id}`), {
      key: 'watch',
    });
    assert.equal(a.sub, b.sub, 'same key, same subscription');
    assert.equal(store.subscriptions().filter((s) => s.owner === 'bram_smith').length, 1);
    await app.set('location', 'mill', { name: 'Mill', danger: 1 });
    await app.set('location', 'cave', { name: 'Cave', danger: 9 });
    await until(() => seen.length >= 1, 5000, 'notification with the new filter');
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(
      seen.every((s) => s.endsWith(':cave')),
      `only the dangerous place: ${seen.join(', ')}`,
    );

    assert.equal(await store.endOwner('bram_smith'), 1);
    assert.equal(store.subscriptions().length, 0);
    await a.close();
    await b.close();
  });

  test('subscriptions survive a supervisor restart; leases end abandoned ones', async () => {
    const seen: WorldChange[] = [];
    const sub = await app.subscribe({ table: 'location', where: [{ field: 'danger', op: '>=', value: 3 }] }, (c) => seen.push(c));
    // An abandoned subscription: its client never renews.
    const orphan = await store.subscribe({ table: 'location', where: [], owner: 'app:gone' });

    await closeSupervisorSide();
    await openSupervisorSide();
    assert.deepEqual(
      store
        .subscriptions()
        .map((s) => s.sub)
        .sort(),
      [sub.sub, orphan.sub].sort(),
      'both restarted from the database',
    );

    await app.set('location', 'swamp', { name: 'Swamp', danger: 4 });
    await app.set('location', 'meadow', { name: 'Meadow', danger: 0 });
    await until(() => seen.length >= 1, 5000, 'notification after the restart');
    assert.deepEqual(
      seen.map((c) => c.id),
      ['swamp'],
    );
    assert.equal(seen[0]!.sub, sub.sub, 'same subscription, same subject');

    // The client renews every lease/3; the orphan lapses after 1.5 s.
    await until(() => !store.subscriptions().some((s) => s.sub === orphan.sub), 6000, 'orphan lease expiry');
    assert.ok(
      store.subscriptions().some((s) => s.sub === sub.sub),
      'a renewed subscription stays',
    );
    await sub.close();
  });

  test('subscriptions with the same filter share one live query, each still hearing every change', async () => {
    const heard = { a: [] as string[], b: [] as string[], c: [] as string[] };
    const filter = { table: 'location', where: [{ field: 'danger', op: '>' as const, value: 1 }] };
    const a = await app.subscribe(filter, (ch) => heard.a.push(ch.id));
    const b = await other.subscribe(filter, (ch) => heard.b.push(ch.id));
    const c = await app.subscribe({ table: 'location' }, (ch) => heard.c.push(ch.id));
    assert.equal(store.subscriptions().length, 3);
    assert.equal(store.liveQueries, 2, 'two distinct filters');
    await app.set('location', 'tower', { name: 'Tower', danger: 2 });
    await until(() => heard.a.length === 1 && heard.b.length === 1 && heard.c.length === 1, 5000, 'all three notified');
    await a.close();
    assert.equal(store.liveQueries, 2, 'b still uses it');
    await app.set('location', 'crypt', { name: 'Crypt', danger: 3 });
    await until(() => heard.b.length === 2 && heard.c.length === 2, 5000, 'b and c notified');
    assert.deepEqual(heard.a, ['tower'], 'a closed subscription hears nothing');
    await b.close();
    await c.close();
    assert.equal(store.liveQueries, 0, 'the last one out kills the live query');
  });

  test('too many subscriptions are refused with CAPACITY_EXCEEDED', async () => {
    assert.deepEqual(store.subscriptions(), [], 'none left from earlier tests');
    const subs = [];
    for (let i = 0; i < 20; i++) subs.push(await (i % 2 ? app : other).subscribe({ table: 'location' }, () => undefined));
    await assert.rejects(
      other.subscribe({ table: 'location' }, () => undefined),
      (e: ThymosError) => e.code === ErrorCode.CAPACITY_EXCEEDED && /max_subscriptions = 20/.test(e.message),
    );
    for (const s of subs) await s.close();
    assert.equal(store.subscriptions().length, 0);
  });

  test('one owner is refused at [world] max_subscriptions_per_owner while another still subscribes', async () => {
    assert.deepEqual(store.subscriptions(), [], 'none left from earlier tests');
    const subs = [];
    for (let i = 0; i < 12; i++) subs.push(await other.subscribe({ table: 'location' }, () => undefined));
    await assert.rejects(
      other.subscribe({ table: 'quest' }, () => undefined),
      (e: ThymosError) =>
        e.code === ErrorCode.CAPACITY_EXCEEDED && /bram_smith/.test(e.message) && /max_subscriptions_per_owner = 12/.test(e.message),
    );
    subs.push(await app.subscribe({ table: 'location' }, () => undefined));
    assert.equal(store.subscriptions().filter((s) => s.owner !== 'bram_smith').length, 1, "the app's subscription runs");
    await subs.shift()!.close();
    subs.push(await other.subscribe({ table: 'quest' }, () => undefined));
    for (const s of subs) await s.close();
    assert.equal(store.subscriptions().length, 0);
  });

  test('under placement by lease, an agent writes only under the claim it holds now (or the one that claim took over on its host)', async () => {
    api.stop();
    const claims = {
      current: (id: string) => (id === 'bram_smith' ? { token: 7, previous: 5 } : { token: undefined, previous: undefined }),
    };
    const leased = worldControlApi(nc, store, logger, undefined, claims);
    leased.start();
    await nc.flush();
    const agentNc = await connectNats({ servers: nats.url, name: 'test-agent-leased' });
    try {
      let token: number | undefined = 7;
      const bram = new WorldClient(agentNc, {
        timeoutMs: 5000,
        by: 'bram_smith',
        owner: 'bram_smith',
        agent: 'bram_smith',
        token: () => token,
      });
      const mira = new WorldClient(agentNc, {
        timeoutMs: 5000,
        by: 'mira_herbalist',
        owner: 'mira_herbalist',
        agent: 'mira_herbalist',
        token: () => 3,
      });
      const refused = (pattern: RegExp) => (e: ThymosError) => e.code === ErrorCode.NOT_OWNER && pattern.test(e.message);
      await bram.set('quest', 'anvil', { title: 'Mend the anvil' });
      token = 5;
      await bram.patch('quest', 'anvil', { status: 'taken' });
      token = 6;
      await assert.rejects(bram.patch('quest', 'anvil', { status: 'done' }), refused(/wrote under claim 6, not the current one \(7\)/));
      await assert.rejects(bram.delete('quest', 'anvil'), refused(/claim 6/));
      token = undefined;
      await assert.rejects(bram.set('quest', 'anvil', { title: 'x' }), refused(/wrote under claim none/));
      await assert.rejects(mira.set('quest', 'herbs', { title: 'Gather herbs' }), refused(/mira_herbalist is not held by this supervisor/));
      const row = await app.get('quest', 'anvil');
      assert.equal(row?.status, 'taken', 'nothing a refused write said was written');
      assert.equal(row?.title, 'Mend the anvil');
      // The application is no agent: it writes as before.
      await app.delete('quest', 'anvil');
    } finally {
      await agentNc.close();
      leased.stop();
      api.start();
      await nc.flush();
    }
  });

  test('[world] url to a server that does not answer fails with DATABASE_ERROR naming it', async () => {
    const port = await freePort();
    const url = `ws://127.0.0.1:${port}`;
    await assert.rejects(openRemoteSurreal(url, { namespace: 'thymos', database: 'world', timeoutMs: 3000 }), (e: ThymosError) => {
      assert.equal(e.code, ErrorCode.DATABASE_ERROR);
      assert.ok(e.message.includes(url), e.message);
      return true;
    });
  });
});
