import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { disposeOwnServerFleet, eventually, runThymos } from '../../helpers/fleet.js';
import { connectAs } from '../../helpers/nats-as.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

/** One fleet of the two: its workspace, its client, and the file its desk's tool writes each call to. */
interface Side {
  name: 'north' | 'south';
  ws: Workspace;
  fleet?: Fleet;
  calls: string;
}

/**
 * Two fleets on one nats-server their user runs: each `thymos nats-config` writes an account of its
 * own, both go in the server's `accounts` block, and each fleet, its supervisor included, sees
 * nothing of the other's agents, events, jobs or streams.
 */
describe('two fleets on one nats-server, an account each', () => {
  let url: string;
  let nats: TestNatsServer | undefined;
  const sides: Side[] = [];
  const open: NatsConnection[] = [];

  const side = (name: Side['name']) => sides.find((s) => s.name === name)!;
  const called = (s: Side) => (existsSync(s.calls) ? readFileSync(s.calls, 'utf8') : '');

  before(async () => {
    url = `nats://127.0.0.1:${await freePort()}`;
    for (const name of ['north', 'south'] as const) {
      const ws = createWorkspace({
        natsUrl: url,
        schema: null,
        extra: `[fleet]\nname = "${name}"\n[lifecycle]\nmin_dwell_ms = 0\n[supervisor]\npool_size = 0`,
      });
      const calls = join(ws.dir, 'calls.log');
      writeFileSync(
        join(ws.dir, 'desk.mjs'),
        `import { appendFileSync } from 'node:fs';\nexport function lookup(input) { appendFileSync(${JSON.stringify(calls)}, 'lookup ' + input.order_id + '\\n'); return { order: input.order_id, status: 'shipped' }; }\n`,
      );
      writeFileSync(
        join(ws.dir, 'desk.pkl'),
        `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] {} }
agents { ["${name}_desk"] { persona { name = "Desk" }; skills { "orders" }; capabilities { "lookup_order" } } }
tools {
  ["lookup_order"] {
    description = "Look up where an order is and whether it has shipped"
    examples { "where is my order ORD-12345"; "has order ORD-12345 shipped yet" }
    input { ["order_id"] { pattern = #"ORD-\\d{5}"#; description = "The order, e.g. ORD-12345" } }
    sideEffect = "read_only"
    executor = new Script { path = "desk.mjs"; export = "lookup" }
  }
}
`,
      );
      ws.writeConfig(
        readFileSync(ws.configPath, 'utf8')
          .replace(`url = ${JSON.stringify(url)}`, `url = ${JSON.stringify(url)}\nidentities = true`)
          .replace('data_dir = "data"', `data_dir = "data"\n[domain]\nschema = "desk.pkl"`),
      );
      sides.push({ name, ws, calls });
    }
  });

  after(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    for (const s of sides) await disposeOwnServerFleet(s.ws, s.fleet, undefined);
    await nats?.stop();
  });

  test('thymos nats-config writes each fleet an account of its own, which one server includes side by side', async () => {
    const serverDir = join(sides[0]!.ws.dir, 'server');
    mkdirSync(serverDir);
    const serverConf = join(serverDir, 'nats.conf');
    writeFileSync(serverConf, '');
    const includes: string[] = [];
    for (const s of sides) {
      const r = await runThymos(['nats-config', '--server-config', serverConf, '--json'], s.ws.dir);
      assert.equal(r.code, 0, r.stderr);
      const report = JSON.parse(r.stdout) as { account: string; include: string; users: string[] };
      assert.equal(report.account, `thymos-fleet-${s.name}`);
      assert.ok(report.users.includes(`agent-${s.name}_desk`));
      includes.push(report.include);
    }
    writeFileSync(
      serverConf,
      [
        `listen: "${new URL(url).host}"`,
        `jetstream { store_dir: ${JSON.stringify(join(serverDir, 'js'))} }`,
        'accounts {',
        ...includes.map((line) => `  ${line}`),
        '}',
        '',
      ].join('\n'),
    );
    nats = await startNatsServer({ config: serverConf });
    for (const s of sides) {
      const config = loadConfig(s.ws.configPath);
      await upFleet(config);
      s.fleet = await connect(config);
    }
  });

  test('both reconcile, publish and work their queues at once; neither fleet, its supervisor included, sees the other’s agents, events, jobs or streams', async () => {
    const north = side('north');
    const south = side('south');
    // The south supervisor, which may subscribe to anything in its account, listens to everything there is.
    const seen: string[] = [];
    const spy = await connectAs(url, join(south.ws.dir, 'data'), 'supervisor', open);
    const all = spy.nc.subscribe('>');
    void (async () => {
      for await (const m of all) seen.push(m.subject);
    })();
    await spy.nc.flush();

    await Promise.all(
      sides.map(async (s) => {
        const report = await s.fleet!.reconcile({ agents: { [`${s.name}_desk`]: { relevance: 1 } } });
        assert.deepEqual(report.failed, [], `${s.name}: ${JSON.stringify(report.failed)}`);
      }),
    );
    for (const s of sides) {
      const ids = (await s.fleet!.status()).agents.map((a) => `${a.id} ${a.state}`);
      assert.deepEqual(ids, [`${s.name}_desk active`], `${s.name} lists its own agent only`);
    }
    // The same job id in both: each fleet's queue deduplicates its own jobs only.
    const order = { north: 'ORD-11111', south: 'ORD-22222' };
    const sent = await Promise.all(
      sides.map((s) => s.fleet!.jobs.publish('support', 'orders', { text: `where is my order ${order[s.name]}` }, { id: 'J-1' })),
    );
    assert.deepEqual(
      sent.map((j) => j.duplicate),
      [false, false],
    );
    await Promise.all(
      sides.map((s) =>
        s.fleet!.publish({ type: 'desk.news', source: 'app', location: 'desk', payload: { summary: `news for ${s.name}` } }),
      ),
    );
    for (const s of sides)
      await eventually(
        async () => {
          const b = (await s.fleet!.jobs.list('support')).find((r) => r.skill === 'orders')!;
          return /lookup ORD-\d{5}/.test(called(s)) && b.waiting === 0 && b.in_progress === 0 ? true : undefined;
        },
        60_000,
        `${s.name}'s job worked and acknowledged`,
      );
    assert.equal(called(north), `lookup ${order.north}\n`, 'the north desk worked the north job only');
    assert.equal(called(south), `lookup ${order.south}\n`, 'the south desk worked the south job only');

    const streams = async (s: Side) => {
      const nc = (await connectAs(url, join(s.ws.dir, 'data'), 'supervisor', open)).nc;
      const jsm = await jetstreamManager(nc);
      const names: string[] = [];
      for await (const info of jsm.streams.list()) names.push(info.config.name);
      const events = await jsm.streams.info(`${s.name.toUpperCase()}_EVENTS`);
      return { names: names.sort(), events: events.state.messages, jsm };
    };
    const n = await streams(north);
    const s = await streams(south);
    assert.ok(n.names.length > 0 && n.names.every((name) => name.startsWith('NORTH_')), n.names.join(', '));
    assert.ok(s.names.length > 0 && s.names.every((name) => name.startsWith('SOUTH_')), s.names.join(', '));
    assert.deepEqual([n.events, s.events], [1, 1], 'each event stream holds its own fleet’s event');
    await assert.rejects(s.jsm.streams.info('NORTH_EVENTS'), /stream not found/, 'the north streams are not in the south account');

    // Everything the south supervisor heard is south's: no subject of north's, though north reconciled, published and worked meanwhile.
    await spy.nc.flush();
    assert.ok(
      seen.some((subject) => subject.startsWith('south.')),
      'the spy hears its own fleet',
    );
    assert.deepEqual(
      seen.filter((subject) => subject.startsWith('north.')),
      [],
    );
  });
});
