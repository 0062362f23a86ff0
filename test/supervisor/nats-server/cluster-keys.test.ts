import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { natsPublicKey, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { downFleet, upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { ClusterOwnership } from '../../../supervisor/ownership/cluster-ownership.js';
import { disposeOwnServerFleet, eventually, runThymos } from '../../helpers/fleet.js';
import { connectAs } from '../../helpers/nats-as.js';
import { startNatsCluster, type TestNatsCluster } from '../../helpers/nats-cluster.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

const LEASE_MS = 3000;
const SECRET = 'a-test-secret-of-more-than-thirty-two-characters';
const BUCKET = 'KEYS_KEYS';
const NOBODY = 'nats://127.0.0.1:1';

/** The agents' keys a host's data directory holds. */
const agentKeysIn = (ws: Workspace) =>
  (existsSync(join(ws.dir, 'data', 'secrets', 'nats')) ? readdirSync(join(ws.dir, 'data', 'secrets', 'nats')) : [])
    .filter((f) => f.startsWith('agent-'))
    .sort();

/** A host's workspace: the fleet `keys` on the cluster, with its own identities and placement by lease. */
function host(name: string, urls: string): Workspace {
  const ws = createWorkspace({
    extra: [
      '[fleet]',
      'name = "keys"',
      '[host]',
      `name = "${name}"`,
      '[cluster]',
      'enabled = true',
      `lease_ms = ${LEASE_MS}`,
      'renew_ms = 400',
      'fence_margin_ms = 1000',
      'replicas = 3',
      '[lifecycle]',
      'min_dwell_ms = 0',
      '[supervisor]',
      'pool_size = 0',
      '[nats]',
      `url = ${JSON.stringify(urls)}`,
      'identities = true',
    ].join('\n'),
  });
  return ws;
}

/**
 * A fleet on two hosts of a three-node cluster keeps one NATS key per agent for the whole fleet,
 * sealed in the cluster's key bucket: a host holds only the keys of the agents it runs, another
 * host starts an agent with the same key, every host writes the same users for the nodes, and no
 * agent reads the bucket.
 */
describe("the agents' NATS keys kept in the cluster", () => {
  let cluster: TestNatsCluster | undefined;
  let a: Workspace;
  let b: Workspace | undefined;
  let fleet: Fleet | undefined;
  const open: NatsConnection[] = [];
  let serverConf = '';
  let firstKey: string | undefined;
  let stopGamma = () => undefined as void;
  let closeGamma = () => Promise.resolve();

  before(async () => {
    process.env.THYMOS_FLEET_KEY = SECRET;
    // Before the cluster runs, the first host's configuration names a server nobody answers on.
    a = host('alpha', NOBODY);
    serverConf = join(a.dir, 'server.conf');
    writeFileSync(serverConf, '');
  });

  after(async () => {
    stopGamma();
    await closeGamma();
    for (const nc of open) await nc.close().catch(() => undefined);
    await fleet?.close().catch(() => undefined);
    await disposeOwnServerFleet(a, undefined, undefined);
    if (b) await disposeOwnServerFleet(b, undefined, undefined);
    await cluster?.stop();
    delete process.env.THYMOS_FLEET_KEY;
  });

  test('set up on the first host before the cluster takes the fleet, the keys are made there; with no server answering, none', async () => {
    const nobody = await runThymos(['nats-config', '--server-config', serverConf], a.dir);
    assert.notEqual(nobody.code, 0);
    assert.match(nobody.stderr, /NATS_UNAVAILABLE.*no server of the cluster answers/);
    assert.deepEqual(agentKeysIn(a), [], 'no server answering is never taken for a cluster being set up');
    // A cluster that admits anyone has no users in force yet: its JetStream is not the fleet's.
    const open = await startNatsCluster(3);
    let r: Awaited<ReturnType<typeof runThymos>>;
    try {
      a.writeConfig(readFileSync(a.configPath, 'utf8').replace(NOBODY, open.urls));
      r = await runThymos(['nats-config', '--server-config', serverConf, '--json'], a.dir);
      a.writeConfig(readFileSync(a.configPath, 'utf8').replace(open.urls, NOBODY));
    } finally {
      await open.stop();
    }
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { users: string[]; keys: string };
    assert.match(report.keys, /^here, until/);
    assert.ok(report.users.includes('agent-elder_rowan'));
    assert.ok(agentKeysIn(a).includes('agent-elder_rowan.nk'));
    firstKey = natsPublicKey(readNatsSeed(join(a.dir, 'data'), 'agent-elder_rowan')!);
  });

  test('the first host up puts them in the sealed bucket and keeps none of an agent it does not run', async () => {
    cluster = await startNatsCluster(3, {
      file: join(a.dir, 'data', 'run', 'nats-account.conf'),
      seed: readNatsSeed(join(a.dir, 'data'), 'supervisor')!,
    });
    a.writeConfig(readFileSync(a.configPath, 'utf8').replace(NOBODY, cluster.urls));
    b = host('beta', cluster.urls);
    const config = loadConfig(a.configPath);
    await upFleet(config);
    assert.deepEqual(agentKeysIn(a), [], 'no agent runs on alpha yet: it holds none of their keys');
    fleet = await connect(config);
    const report = await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
    assert.deepEqual(agentKeysIn(a), ['agent-elder_rowan.nk'], 'alpha holds the key of the agent it runs, and only that');
    assert.equal(natsPublicKey(readNatsSeed(join(a.dir, 'data'), 'agent-elder_rowan')!), firstKey);

    // The bucket holds every agent's key, sealed: no seed in the clear.
    const sup = await connectAs(cluster.urls, join(a.dir, 'data'), 'supervisor', open);
    const kv = await new Kvm(jetstream(sup.nc)).open(BUCKET);
    const entry = await kv.get('agent.elder_rowan');
    const value = JSON.parse(entry!.string()) as { public_key: string; sealed: string };
    assert.equal(value.public_key, firstKey);
    assert.doesNotMatch(entry!.string(), /SU[A-Z2-7]{20}/);
    const keys: string[] = [];
    for await (const k of await kv.keys()) keys.push(k);
    assert.ok(keys.includes('agent.bram_smith') && keys.includes('agent.elder_rowan'));

    // An agent may not read the bucket: nats-server refuses it JetStream's API there.
    const agent = await connectAs(cluster.urls, join(a.dir, 'data'), 'agent-elder_rowan', open);
    await assert.rejects(
      (async () => {
        const theirs = await new Kvm(jetstream(agent.nc, { timeout: 2000 })).open(BUCKET);
        await theirs.get('agent.bram_smith');
      })(),
    );
  });

  test('a second host makes no key of its own and writes the nodes the same users', async () => {
    mkdirSync(join(b!.dir, 'data', 'secrets', 'nats'), { recursive: true, mode: 0o700 });
    for (const who of ['supervisor', 'client', 'approver', 'spare'])
      copyFileSync(join(a.dir, 'data', 'secrets', 'nats', `${who}.nk`), join(b!.dir, 'data', 'secrets', 'nats', `${who}.nk`));
    const r = await runThymos(['nats-config', '--server-config', serverConf, '--json'], b!.dir);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { made: string[]; keys: string };
    assert.deepEqual(report.made, []);
    assert.equal(report.keys, 'cluster');
    assert.deepEqual(agentKeysIn(b!), []);
    const users = (ws: Workspace) =>
      readFileSync(join(ws.dir, 'data', 'run', 'nats-account.conf'), 'utf8')
        .split('\n')
        .slice(2)
        .join('\n');
    assert.equal(users(b!), users(a), 'both hosts write the nodes the same account');

    // A value planted in the bucket without the fleet's secret gives nobody a user: nats-config refuses it, naming it.
    const sup = await connectAs(cluster!.urls, join(a.dir, 'data'), 'supervisor', open);
    const kv = await new Kvm(jetstream(sup.nc)).open(BUCKET);
    const original = (await kv.get('agent.old_fenn'))!.string();
    await kv.put(
      'agent.old_fenn',
      JSON.stringify({
        who: 'supervisor',
        public_key: natsPublicKey(readNatsSeed(join(a.dir, 'data'), 'client')!),
        sealed: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      }),
    );
    const refused = await runThymos(['nats-config', '--server-config', serverConf], b!.dir);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /KEYS_KEYS agent\.old_fenn does not open with this host's fleet secret/);
    await kv.put('agent.old_fenn', original);

    // Without the fleet's secret, the second host does not start: it names the variable.
    process.env.THYMOS_FLEET_KEY = 'short';
    const bad = await runThymos(['up'], b!.dir).finally(() => (process.env.THYMOS_FLEET_KEY = SECRET));
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /THYMOS_FLEET_KEY holds 5 characters, expected at least 32/);
  });

  test('the agent moves to the second host with the same key, and the first keeps none', async () => {
    await fleet!.close();
    fleet = undefined;
    await downFleet(loadConfig(a.configPath));
    assert.deepEqual(agentKeysIn(a), [], 'alpha, down, holds no agent key');
    const nc = (await connectAs(cluster!.urls, join(a.dir, 'data'), 'supervisor', open)).nc;
    const gamma = await ClusterOwnership.open({
      nc,
      names: new FleetNames('keys'),
      host: 'gamma',
      leaseMs: LEASE_MS,
      replicas: 3,
      dataDir: join(a.dir, 'gamma'),
    });
    stopGamma = gamma.renewEvery(400, { failed: () => undefined });
    closeGamma = () => gamma.close();
    // A third host takes bram_smith as soon as alpha's lease ends.
    await eventually(() => gamma.claim('bram_smith').catch(() => undefined), 10 * LEASE_MS, 'gamma to claim bram_smith');
    const config = loadConfig(b!.configPath);
    await upFleet(config);
    fleet = await connect(config);
    // Alpha's lease ends on its own: until then beta may not claim the agent.
    await eventually(
      async () => {
        await fleet!.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
        const row = (await fleet!.status()).agents.find((x) => x.id === 'elder_rowan');
        return row?.state === 'active' ? row : undefined;
      },
      10 * LEASE_MS,
      'beta to claim and start elder_rowan once alpha’s lease ended',
    );
    assert.deepEqual(agentKeysIn(b!), ['agent-elder_rowan.nk']);
    assert.equal(natsPublicKey(readNatsSeed(join(b!.dir, 'data'), 'agent-elder_rowan')!), firstKey, 'the same key as on alpha');
  });

  test('an agent another host holds is named in the reconcile’s warnings; one put to sleep takes its key away with it', async () => {
    const report = await fleet!.reconcile({ agents: { bram_smith: { relevance: 1 } } });
    assert.deepEqual(report.started, []);
    assert.ok(
      report.warnings?.some((w) => /bram_smith is held by host gamma, whose lease is live: not moved by this host/.test(w)),
      JSON.stringify(report.warnings),
    );
    // elder_rowan, out of this context, went to sleep here: its key left the host with it.
    assert.ok(report.stopped.includes('elder_rowan'), JSON.stringify(report));
    assert.deepEqual(agentKeysIn(b!), []);
  });
});
