import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';

import { isThymosError } from '../../../shared/errors/errors.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { ClusterOwnership, type ClusterOwnershipOptions } from '../../../supervisor/ownership/cluster-ownership.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsCluster, type TestNatsCluster } from '../../helpers/nats-cluster.js';

/**
 * Placement by lease on a three-node nats-server cluster (Debian's 2.9.10, replicas 3): three hosts,
 * each connected through its own node, claim agents in the fleet's KV bucket.
 */
describe('ClusterOwnership: placement by lease in a replicated KV bucket', () => {
  let cluster: TestNatsCluster;
  const open: NatsConnection[] = [];
  const owners: ClusterOwnership[] = [];
  const names = new FleetNames('lease');

  /** A connection through node `i` first (the others after it, as a host lists its own node first). */
  const through = async (i: number) => {
    const urls = cluster.urls.split(',');
    const nc = await connect({ servers: [urls[i]!, ...urls.filter((_, j) => j !== i)], noRandomize: true, reconnectTimeWait: 250 });
    open.push(nc);
    return nc;
  };
  const host = async (name: string, node: number, leaseMs = 2000, extra: Partial<ClusterOwnershipOptions> = {}) => {
    const owner = await ClusterOwnership.open({
      nc: await through(node),
      names,
      host: name,
      leaseMs,
      replicas: 3,
      dataDir: `/srv/${name}-${node}/data`,
      ...extra,
    });
    owners.push(owner);
    return owner;
  };
  /** Renews `owner` every 200 ms, as its supervisor would, until the returned function is called. */
  const renewing = (owner: ClusterOwnership) => owner.renewEvery(200, { failed: () => undefined });
  const notOwner = (pattern: RegExp) => (err: unknown) => isThymosError(err, 'NOT_OWNER') && pattern.test(err.message);

  before(async () => {
    cluster = await startNatsCluster(3);
  });
  after(async () => {
    for (const o of owners) await o.close().catch(() => undefined);
    for (const nc of open) await nc.close().catch(() => undefined);
    await cluster?.stop();
  });

  test('three hosts racing for the same agents: each agent goes to exactly one, the others are refused, and every host reads the same placement', async () => {
    const hosts = await Promise.all([host('a', 0), host('b', 1), host('c', 2)]);
    const ids = Array.from({ length: 12 }, (_, i) => `npc_${i}`);
    const results = await Promise.all(
      hosts.map((h) =>
        Promise.all(
          ids.map((id) =>
            h.claim(id).then(
              (token) => ({ id, token }),
              (err: unknown) => ({ id, err }),
            ),
          ),
        ),
      ),
    );
    for (const id of ids) {
      const won = results.flatMap((r, i) => r.filter((x) => x.id === id && 'token' in x).map(() => i));
      assert.equal(won.length, 1, `${id} is held by exactly one host (won by ${won.join(', ')})`);
      for (const r of results)
        for (const x of r.filter((y) => y.id === id && 'err' in y))
          assert.ok(isThymosError((x as { err: unknown }).err, 'NOT_OWNER'), String((x as { err: unknown }).err));
    }
    const placed = [await hosts[0]!.placements(), await hosts[2]!.placements()];
    assert.deepEqual([...placed[0]!.entries()].sort(), [...placed[1]!.entries()].sort(), 'the same from every host');
    for (const [i, h] of hosts.entries())
      for (const x of results[i]!)
        if ('token' in x) {
          assert.equal(h.holds(x.id), x.token);
          assert.equal(placed[0]!.get(x.id)?.token, x.token, 'the token is the placement’s revision');
          assert.equal(await h.claim(x.id), x.token, 'claiming a held agent again returns its token');
        }
    // Released, an agent goes to the next host that claims it, under a greater token.
    const winner = results.findIndex((r) => r.some((x) => 'token' in x));
    const won = results[winner]!.find((x) => 'token' in x) as { id: string; token: number };
    const holder = hosts[winner]!;
    const other = hosts[(winner + 1) % hosts.length]!;
    await holder.release(won.id);
    assert.equal(holder.holds(won.id), undefined);
    assert.ok((await other.claim(won.id)) > won.token);
    for (const h of hosts) await h.close();
  });

  test('a host that stops renewing: its agents go to another once the server’s clock says its lease ended, under a greater token, and its late renewal fails', async () => {
    const paused = await host('paused', 0, 3000);
    const taker = await host('taker', 1, 3000);
    const stopTaker = renewing(taker);
    const token = await paused.claim('elder_rowan');
    await paused.renew();
    await assert.rejects(taker.claim('elder_rowan'), notOwner(/held by host paused, whose lease is live/));
    const deadline = paused.deadline;
    // No renewal, as a supervisor stopped with SIGSTOP sends none.
    const taken = await eventually(() => taker.claim('elder_rowan').catch(() => undefined), 10_000, 'the lease to end on the server');
    assert.ok(taken > token);
    assert.ok(Date.now() > deadline, 'taken only after the holder’s own deadline');
    await assert.rejects(paused.renew(), notOwner(/paused renewed after its lease had ended: it no longer holds elder_rowan/));
    assert.equal(paused.holds('elder_rowan'), undefined);
    // Back, it takes a new lease and may claim again, but not what the other holds now.
    await assert.rejects(paused.claim('elder_rowan'), notOwner(/held by host taker/));
    assert.ok((await paused.claim('bram_smith')) > taken);
    await paused.renew();
    stopTaker();
    await taker.close();
    await paused.close();
  });

  test('a renewal in time still fails once another host has marked the lease expired (compare-and-set on its revision)', async () => {
    // The judge counts leases of 300 ms, the holder of 10 s: the judge ends the lease while the holder thinks it in time.
    const holder = await host('slow', 0, 10_000);
    const judge = await host('hasty', 2, 300);
    await holder.claim('mira_herbalist');
    const taken = await eventually(() => judge.claim('mira_herbalist').catch(() => undefined), 10_000, 'the judge to take the agent');
    assert.ok(taken > 0);
    assert.ok(Date.now() < holder.deadline, 'the holder’s own deadline has not passed');
    await assert.rejects(holder.renew(), notOwner(/slow found its lease ended by another host: it no longer holds mira_herbalist/));
    await holder.close();
    await judge.close();
  });

  test('a second host under a live host’s name is refused; a supervisor started again from the same data directory takes the lease over at once', async () => {
    const first = await host('mill', 1, 5000);
    const token = await first.claim('tomas_innkeeper');
    await assert.rejects(
      host('mill', 2, 5000),
      (err: unknown) =>
        isThymosError(err, 'SUPERVISOR_ALREADY_RUNNING') &&
        /"mill" holds a live lease .*each host of a fleet needs its own \[host\] name/.test(err.message),
    );
    // Stopped, it leaves its lease to end on its own: its agents may run to their fence, so no other host takes them before.
    await first.close();
    const other = await host('other', 2, 5000);
    await assert.rejects(other.claim('tomas_innkeeper'), notOwner(/held by host mill, whose lease is live/));
    // The same directory on the same machine (it holds the data lock): the earlier run is over; its agents go on under the new claim.
    const again = await host('mill', 1, 5000);
    // Its earlier run's placement is still this host's: another host may not take it while the host's lease is live, whichever run it names.
    await assert.rejects(other.claim('tomas_innkeeper'), notOwner(/held by host mill, whose lease is live/));
    const taken = await again.claim('tomas_innkeeper');
    assert.ok(taken > token);
    assert.equal(again.succeeded('tomas_innkeeper'), token, 'the claim it took over, which a running agent still names');
    await again.close();
    await other.close();
  });

  test('a placement bucket made on one node is brought to three when a host opens it with replicas 3', async () => {
    const names1 = new FleetNames('scaled');
    const one = await ClusterOwnership.open({
      nc: await through(0),
      names: names1,
      host: 'a',
      leaseMs: 5000,
      replicas: 1,
      dataDir: '/srv/a',
    });
    await one.claim('cal');
    const jsm = await jetstreamManager(await through(1));
    assert.equal((await jsm.streams.info('KV_SCALED_PLACEMENT')).config.num_replicas, 1);
    const three = await ClusterOwnership.open({
      nc: await through(1),
      names: names1,
      host: 'b',
      leaseMs: 5000,
      replicas: 3,
      dataDir: '/srv/b',
    });
    const info = await jsm.streams.info('KV_SCALED_PLACEMENT');
    assert.equal(info.config.num_replicas, 3);
    assert.equal(info.cluster?.replicas?.filter((r) => r.current).length, 2, 'both new copies caught up');
    await assert.rejects(three.claim('cal'), notOwner(/held by host a/), 'what the bucket held is kept');
    await one.close();
    await three.close();
  });

  test('with a node killed, claims and renewals go on through the other two', async () => {
    const h = await host('survivor', 0, 10_000);
    const errors: string[] = [];
    const stop = h.renewEvery(500, { failed: (err) => errors.push((err as Error).message) });
    const token = await h.claim('cal');
    await cluster.nodes[0]!.stop(true);
    try {
      await eventually(() => h.claim('ann').catch(() => undefined), 20_000, 'a claim through the remaining nodes');
      const renewed = h.deadline;
      await eventually(() => (h.deadline > renewed ? true : undefined), 10_000, 'a renewal through the remaining nodes');
      assert.equal(h.holds('cal'), token, `the lease was kept through the node's loss (${errors.join('; ')})`);
    } finally {
      stop();
      await cluster.nodes[0]!.start();
    }
    await h.close();
  });
});
