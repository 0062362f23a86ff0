import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { jetstreamManager } from '@nats-io/jetstream';
import { type Authenticator, connect, nkeyAuthenticator } from '@nats-io/transport-node';

import { eventually } from './fleet.js';
import { freePort } from './ports.js';
import { stopChild } from './stop-child.js';
import { tempDir } from './temp-dir.js';

/** One nats-server node of a test cluster. */
export interface ClusterNode {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  /** The pid of the running process, or -1 while it is stopped. */
  readonly pid: number;
  /** Stops it by pid (SIGTERM, then SIGKILL; with `kill`, SIGKILL at once). */
  stop(kill?: boolean): Promise<void>;
  /** Starts it again on its ports, with its JetStream store. */
  start(): Promise<void>;
  /**
   * Cuts it off from the others, as a network partition would: restarted with its route port moved
   * and its routes to a port nobody listens on, so neither side reaches the other; its clients
   * reconnect to it alone.
   */
  isolate(): Promise<void>;
  /** Restarted with its routes again: it rejoins the cluster. */
  rejoin(): Promise<void>;
}

/** Three nats-server nodes with routes on 127.0.0.1 and JetStream: what a fleet's cluster is in tests. */
export interface TestNatsCluster {
  readonly nodes: readonly ClusterNode[];
  /** Every node's URL, comma-separated, as `[nats] url` takes them. */
  readonly urls: string;
  /** Waits until JetStream answers through node `i` (every node when left out) and places a stream on as many replicas as there are nodes. */
  ready(i?: number): Promise<void>;
  stop(): Promise<void>;
}

/** A cluster whose nodes admit a fleet's users only: its account file, and a seed the helper connects with. */
export interface ClusterAccount {
  /** A fleet's `data/run/nats-account.conf`, included in every node's `accounts` block. */
  file: string;
  /** The seed of a user in it with JetStream (the supervisor's), for the helper's own checks. */
  seed: Uint8Array;
}

/**
 * Starts a cluster of `size` nats-server nodes (routes between them all on 127.0.0.1, JetStream in
 * a temporary folder each), and waits until JetStream answers on every node. With `account`,
 * every node admits that account's users and nobody else.
 */
export async function startNatsCluster(size = 3, account?: ClusterAccount): Promise<TestNatsCluster> {
  const dir = tempDir('thymos-cluster-');
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort() })));
  const auth = account ? nkeyAuthenticator(account.seed) : undefined;
  const include = account ? [`accounts { include ${JSON.stringify(relative(dir, account.file))} }`] : [];
  const nodes = ports.map((p, i) => clusterNode(dir, `n${i + 1}`, p, ports, include, auth));
  for (const node of nodes) await node.start();
  const cluster: TestNatsCluster = {
    nodes,
    urls: nodes.map((n) => n.url).join(','),
    async ready(i?: number) {
      for (const node of i === undefined ? nodes : [nodes[i]!]) await jetStreamAnswers(node.url, size, auth);
    },
    async stop() {
      for (const node of nodes) await node.stop();
    },
  };
  await cluster.ready();
  return cluster;
}

function clusterNode(
  dir: string,
  name: string,
  own: { client: number; route: number },
  all: ReadonlyArray<{ client: number; route: number }>,
  include: readonly string[],
  authenticator: Authenticator | undefined,
): ClusterNode {
  const config = join(dir, `${name}.conf`);
  const write = (routePort: number, routes: readonly number[]) =>
    writeFileSync(
      config,
      [
        `server_name: ${name}`,
        `listen: "127.0.0.1:${own.client}"`,
        `jetstream { store_dir: ${JSON.stringify(join(dir, name))} }`,
        ...include,
        'cluster {',
        '  name: thymos_test',
        // Clients use the servers they are given, not the others a node would tell them of: a host cut off stays with its node.
        '  no_advertise: true',
        `  listen: "127.0.0.1:${routePort}"`,
        `  routes: [${routes.map((port) => JSON.stringify(`nats-route://127.0.0.1:${port}`)).join(', ')}]`,
        '}',
        '',
      ].join('\n'),
    );
  write(
    own.route,
    all.filter((p) => p !== own).map((p) => p.route),
  );
  let child: ChildProcess | undefined;
  const url = `nats://127.0.0.1:${own.client}`;
  return {
    name,
    url,
    port: own.client,
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? (child.pid ?? -1) : -1;
    },
    async start() {
      // In a folder of its own: nats-server 2.9.10 can write a consumer's meta.inf into its working
      // directory (seen when the consumer's stream was scaled down to one node and up again at once).
      const c = spawn('nats-server', ['-c', config], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
      child = c;
      let stderr = '';
      c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      await eventually(
        async () => {
          if (c.exitCode !== null) throw new Error(`nats-server ${name} exited: ${stderr}`);
          const nc = await connect({ servers: url, maxReconnectAttempts: 0, ...(authenticator ? { authenticator } : {}) }).catch(
            () => undefined,
          );
          await nc?.close();
          return nc ? true : undefined;
        },
        10_000,
        `nats-server ${name} to listen on ${url}`,
      );
    },
    async isolate() {
      await this.stop();
      // A JetStream cluster node refuses to start with no routes: one to a port nobody listens on.
      write(await freePort(), [await freePort()]);
      await this.start();
    },
    async rejoin() {
      await this.stop();
      write(
        own.route,
        all.filter((p) => p !== own).map((p) => p.route),
      );
      await this.start();
    },
    async stop(kill = false) {
      await stopChild(child, 5000, kill ? 'SIGKILL' : 'SIGTERM');
    },
  };
}

/**
 * Waits until a stream of `replicas` can be made through `url`: the cluster has a meta leader, the
 * node knows it, and every peer has joined (before that, nats-server finds "no suitable peers").
 */
async function jetStreamAnswers(url: string, replicas: number, authenticator: Authenticator | undefined): Promise<void> {
  await eventually(
    async () => {
      const nc = await connect({ servers: url, maxReconnectAttempts: 0, ...(authenticator ? { authenticator } : {}) }).catch(
        () => undefined,
      );
      if (!nc) return undefined;
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2000 });
        const name = `READY_${process.pid}_${Date.now()}`;
        await jsm.streams.add({ name, subjects: [`ready.${process.pid}.${Date.now()}`], num_replicas: replicas });
        await jsm.streams.delete(name);
        return true;
      } catch {
        return undefined;
      } finally {
        await nc.close();
      }
    },
    30_000,
    `JetStream to place ${replicas} replicas through ${url}`,
  );
}
