import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';

import { startNatsCluster, type TestNatsCluster } from '../../helpers/nats-cluster.js';

/**
 * What placement by lease stands on, checked on the nats-server the fleet runs (Debian's 2.9.10):
 * a three-node cluster takes the KV bucket and the object store `@nats-io/kv` and `@nats-io/obj`
 * create with three replicas, keeps a key's compare-and-set, and stamps each write with the
 * server's time.
 */
describe('KV and object store on a three-node nats-server cluster', () => {
  let cluster: TestNatsCluster;
  let nc: NatsConnection;

  before(async () => {
    cluster = await startNatsCluster(3);
    nc = await connect({ servers: cluster.urls.split(',') });
  });
  after(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  test('a KV bucket with three replicas: create once, update only at the revision read, a later write a greater revision and server time', async () => {
    const kv = await new Kvm(nc).create('thymos_test_placement', { replicas: 3, history: 1 });
    const info = await (await jetstreamManager(nc)).streams.info('KV_thymos_test_placement');
    assert.equal(info.config.num_replicas, 3);
    assert.equal((info.cluster?.replicas?.length ?? 0) + 1, 3, 'a leader and two replicas');

    const first = await kv.create('agent.elder_rowan', JSON.stringify({ host: 'a' }));
    await assert.rejects(kv.create('agent.elder_rowan', JSON.stringify({ host: 'b' })), /wrong last sequence|key exists/);
    await assert.rejects(kv.update('agent.elder_rowan', JSON.stringify({ host: 'b' }), first + 100), /wrong last sequence/);
    const second = await kv.update('agent.elder_rowan', JSON.stringify({ host: 'b' }), first);
    assert.ok(second > first);
    await assert.rejects(kv.update('agent.elder_rowan', JSON.stringify({ host: 'c' }), first), /wrong last sequence/, 'a stale revision');
    const entry = await kv.get('agent.elder_rowan');
    assert.equal(entry?.revision, second);
    assert.deepEqual(entry?.json(), { host: 'b' });
    const other = await kv.put('host.a', 'alive');
    const stamped = await kv.get('host.a');
    assert.ok(other > second);
    assert.ok(stamped!.created.getTime() >= entry!.created.getTime(), 'the server stamps each write with its time');
  });

  test('an object store with three replicas keeps what is put, whole', async () => {
    const os = await new Objm(nc).create('thymos_test_archives', { replicas: 3 });
    const data = new Uint8Array(300_000).map((_, i) => i % 251);
    await os.putBlob({ name: 'elder_rowan.tar' }, data);
    const back = await os.getBlob('elder_rowan.tar');
    assert.deepEqual(back, data);
    const info = await (await jetstreamManager(nc)).streams.info('OBJ_thymos_test_archives');
    assert.equal(info.config.num_replicas, 3);
  });
});
