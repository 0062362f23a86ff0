import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { EventsSettingsSchema } from '../../../shared/config/fleet-settings.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { QueueSchema } from '../../../shared/domain/queue-schema.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { ensureAgentConsumer, ensureEventStream, ensureRouterConsumer, publishWorldEvent } from '../../../shared/nats/event-stream.js';
import { ensureJobQueues, publishJob } from '../../../shared/nats/job-queue.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { parseJob } from '../../../shared/protocol/job.js';
import { parseWorldEvent } from '../../../shared/protocol/world-event.js';
import { upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { disposeOwnServerFleet, eventually } from '../../helpers/fleet.js';
import { startNatsCluster, type TestNatsCluster } from '../../helpers/nats-cluster.js';
import { startNatsServer } from '../../helpers/nats-server.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../../helpers/workspace.js';

const settings = EventsSettingsSchema.parse({});
const support = QueueSchema.parse({ maxDeliver: 3, ackWaitMs: 2000 });

/** How many nodes keep `stream`, once it has a leader and every other node has caught up. */
async function caughtUp(jsm: JetStreamManager, stream: string): Promise<number> {
  return eventually(
    async () => {
      const info = await jsm.streams.info(stream);
      const followers = info.cluster?.replicas ?? [];
      return info.cluster?.leader && followers.length === info.config.num_replicas - 1 && followers.every((r) => r.current)
        ? info.config.num_replicas
        : undefined;
    },
    20_000,
    `${stream} to have a leader and its replicas current`,
  );
}

/** How many times each id (the JSON body's `id`) is in `stream`, read by sequence (a work queue takes no ordered consumer). */
async function idsIn(jsm: JetStreamManager, stream: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const { first_seq, last_seq, messages } = (await jsm.streams.info(stream)).state;
  for (let seq = first_seq; messages > 0 && seq <= last_seq; seq++) {
    const id = (await jsm.streams.getMessage(stream, { seq }))?.json<{ id: string }>().id;
    if (id !== undefined) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * `[cluster] replicas` on a three-node nats-server cluster (Debian's 2.9.10): every stream a fleet
 * makes is kept on three nodes, one kept on one node is brought to three with what it holds, and a
 * node killed while the client publishes loses nothing nats-server acknowledged and keeps nothing twice.
 */
describe('the fleet’s streams on a three-node nats-server cluster', () => {
  let cluster: TestNatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  before(async () => {
    cluster = await startNatsCluster(3);
    nc = await connectNats({ servers: cluster.urls, name: 'test-replicas' });
    jsm = await jetstreamManager(nc);
  });
  after(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  test('each stream is made on as many nodes as replicas says, and one on another number is brought to it with what it holds and its consumers', async () => {
    const names = new FleetNames('scale');
    const streams = [names.eventStream, names.heardStream, names.inboxStream, names.jobStream('support'), names.deadStream];
    await ensureEventStream(nc, settings, names);
    await ensureJobQueues(jsm, { support }, new Map([['support', ['billing']]]), names);
    await ensureRouterConsumer(jsm, settings, names);
    await ensureAgentConsumer(jsm, 'ada', settings, names);
    for (let i = 0; i < 20; i++) await publishWorldEvent(nc, parseWorldEvent({ id: `before-${i}`, type: 'market.opened' }), names);
    for (let i = 0; i < 5; i++) await publishJob(nc, parseJob({ id: `job-${i}`, queue: 'support', skill: 'legal', payload: {} }), names);
    for (const stream of streams) assert.equal((await jsm.streams.info(stream)).config.num_replicas, 1, stream);

    await ensureEventStream(nc, settings, names, 3);
    await ensureJobQueues(jsm, { support }, new Map([['support', ['billing']]]), names, 3);
    for (const stream of streams) {
      const info = await jsm.streams.info(stream);
      const followers = info.cluster?.replicas ?? [];
      assert.equal(info.config.num_replicas, 3, stream);
      assert.ok(info.cluster?.leader && followers.length === 2 && followers.every((r) => r.current), `${stream} is whole on three nodes`);
    }
    assert.equal((await jsm.streams.info(names.eventStream)).state.messages, 20);
    assert.equal((await jsm.streams.info(names.jobStream('support'))).state.messages, 5);
    for (const [stream, consumer] of [
      [names.eventStream, names.routerConsumer],
      [names.heardStream, names.heardConsumer('ada')],
      [names.inboxStream, names.inboxConsumer('ada')],
      [names.jobStream('support'), names.skillConsumer('billing')],
    ] as const) {
      await eventually(
        async () => ((await jsm.consumers.info(stream, consumer)).cluster?.replicas?.length === 2 ? true : undefined),
        10_000,
        `${consumer} on three nodes with its stream`,
      );
    }

    await ensureEventStream(nc, settings, names, 1);
    assert.equal(await caughtUp(jsm, names.eventStream), 1, 'back on one node');
    assert.equal((await jsm.streams.info(names.eventStream)).state.messages, 20);
  });

  test('three replicas on a nats-server that is no cluster is NATS_UNAVAILABLE naming [cluster] replicas', async () => {
    const single = await startNatsServer({ jetstream: true });
    const one = await connectNats({ servers: single.url, name: 'test-single' });
    try {
      await assert.rejects(
        ensureEventStream(one, settings, new FleetNames('lone'), 3),
        (err: unknown) => isThymosError(err, 'NATS_UNAVAILABLE') && /stream LONE_EVENTS: .*\[cluster\] replicas = 3/.test(err.message),
      );
    } finally {
      await one.close();
      await single.stop();
    }
  });

  describe('a fleet with [cluster] replicas = 3', () => {
    let ws: Workspace;
    let fleet: Fleet | undefined;
    const dir = mkdtempSync(join(tmpdir(), 'thymos-replicas-'));
    const names = new FleetNames('thymos');

    before(async () => {
      const schema = join(dir, 'desk.pkl');
      writeFileSync(
        schema,
        `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] { maxDeliver = 3 } }
agents {
  ["billing_desk"] { persona { name = "Billing" }; skills { "billing" }; queues { "support" } }
  ["shipping_desk"] { persona { name = "Shipping" }; skills { "shipping" } }
}
`,
      );
      ws = createWorkspace({
        natsUrl: cluster.urls,
        schema,
        extra: '[cluster]\nreplicas = 3\n[supervisor]\npool_size = 0\nrequest_timeout_ms = 8000',
      });
    });
    after(async () => {
      await disposeOwnServerFleet(ws, fleet, undefined);
      rmSync(dir, { recursive: true, force: true });
    });

    test('every stream it makes is kept on three nodes, the event stream made on one node before it started included', async () => {
      const config = loadConfig(ws.configPath);
      await ensureEventStream(nc, config.events, names);
      for (let i = 0; i < 5; i++) await publishWorldEvent(nc, parseWorldEvent({ id: `early-${i}`, type: 'market.opened' }), names);
      assert.equal((await jsm.streams.info(names.eventStream)).config.num_replicas, 1);
      await upFleet(config);
      fleet = await connect(config);
      const made = new Map<string, number>();
      for await (const info of jsm.streams.list())
        if (info.config.name.startsWith('THYMOS_')) made.set(info.config.name, info.config.num_replicas);
      assert.deepEqual(
        [...made].sort(),
        [names.deadStream, names.eventStream, names.heardStream, names.inboxStream, names.jobStream('support')].sort().map((s) => [s, 3]),
      );
      assert.equal(await caughtUp(jsm, names.eventStream), 3);
      assert.deepEqual(
        [...(await idsIn(jsm, names.eventStream)).keys()].sort(),
        [0, 1, 2, 3, 4].map((i) => `early-${i}`),
      );
    });

    test('a node killed while the client publishes events and jobs and reconciles: each acknowledged one is kept once, and the fleet answers on', async (t) => {
      const client = fleet!;
      for (const stream of [names.eventStream, names.jobStream('support')]) assert.equal(await caughtUp(jsm, stream), 3);
      // The leader of the event stream: its loss needs a new leader elected while publishes wait.
      const leader = (await jsm.streams.info(names.eventStream)).cluster!.leader!;
      const node = cluster.nodes.find((n) => n.name === leader)!;
      const acked = { events: new Set<string>(), jobs: new Set<string>() };
      const failed: string[] = [];
      // Core NATS carries a request to the supervisor and its answer at most once: an answer on its way
      // through the killed node is lost (TIMEOUT after [supervisor] request_timeout_ms), and a request
      // that comes before the supervisor's subscription has moved to another node finds nobody
      // (FLEET_NOT_RUNNING).
      const reconciles: Array<Promise<string>> = [];
      const reconcile = () =>
        reconciles.push(
          client.reconcile({}).then(
            () => 'answered',
            (err: unknown) => (isThymosError(err, 'TIMEOUT') ? 'lost' : isThymosError(err, 'FLEET_NOT_RUNNING') ? 'unheard' : String(err)),
          ),
        );
      const publishing = async (kind: 'events' | 'jobs', count: number) => {
        for (let i = 0; i < count; i++) {
          const id = `${kind}-${i}`;
          if (kind === 'events' && i % 5 === 0) reconcile();
          if (kind === 'events' && i === 10) await node.stop(true);
          try {
            if (kind === 'events') await client.publish({ id, type: 'market.bell' });
            else await client.jobs.publish('support', 'legal', { ticket: id }, { id });
            acked[kind].add(id);
          } catch (err) {
            failed.push(`${id}: ${(err as Error).message}`);
          }
        }
      };
      await Promise.all([publishing('events', 60), publishing('jobs', 30)]);
      const outcomes = await Promise.all(reconciles);
      assert.equal(node.pid, -1, `node ${leader} was killed`);
      assert.deepEqual(failed, [], 'every publish was acknowledged, tried again under its id while no leader answered');
      t.diagnostic(`reconciles meanwhile: ${outcomes.join(', ')}`);
      // Asked as the node died (with events 0, 5 and 10), a reconcile may have gone unanswered; asked
      // after it, once publishes went through again, each is answered.
      assert.deepEqual(
        outcomes.map((o, i) => (i < 3 && (o === 'lost' || o === 'unheard') ? 'answered' : o)),
        outcomes.map(() => 'answered'),
      );
      assert.deepEqual((await client.reconcile({})).unchanged.sort(), ['billing_desk', 'shipping_desk'], 'reconciles with a node down');
      assert.ok((await client.status()).supervisor.pid > 0, 'the supervisor answers with a node down');

      await node.start();
      await cluster.ready();
      for (const [stream, ids] of [
        [names.eventStream, acked.events],
        [names.jobStream('support'), acked.jobs],
      ] as const) {
        assert.equal(await caughtUp(jsm, stream), 3, `${stream} whole on three nodes again`);
        const kept = await idsIn(jsm, stream);
        const missing = [...ids].filter((id) => !kept.has(id));
        const twice = [...kept].filter(([, n]) => n > 1).map(([id]) => id);
        assert.deepEqual([missing, twice], [[], []], `${stream}: every acknowledged id, each once`);
      }
    });
  });
});
