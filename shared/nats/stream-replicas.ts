import { setTimeout as sleep } from 'node:timers/promises';

import type { JetStreamManager, StreamConfig, StreamInfo, StreamUpdateConfig } from '@nats-io/jetstream';

import type { StreamReplicas } from '../config/cluster-settings.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';

/** How long a stream whose replicas changed is waited for to be whole on its new nodes. */
const CATCH_UP_MS = 30_000;
/**
 * Tries of a publish to a stream kept on several nodes. nats.js waits 0, 250, 250, 500, 500, 3000
 * and 5000 ms (with jitter) between them: about 10 s without a stream leader, several times the
 * 2-4 s nats-server 2.9 took to elect one when a node of three on one machine was killed.
 */
const FAILOVER_ATTEMPTS = 8;

/** How a fleet's process publishes into the fleet's streams. */
export interface PublishOptions {
  /**
   * Tries while no stream answers, or none in time, each with the same message id (a stream that
   * stored an earlier try keeps the message once): nats.js `retries`.
   * @default 1
   */
  attempts?: number;
}

/**
 * How many tries a publish gets on streams kept on `replicas` nodes: one on a single node, where no
 * stream answering means there is none; on a cluster, enough to outlast the election of a new
 * leader after a node is lost, when for a few seconds no stream answers.
 */
export function publishAttempts(replicas: StreamReplicas): number {
  return replicas === 1 ? 1 : FAILOVER_ATTEMPTS;
}

/**
 * Waits for nats-server to make stream `name`, or change its configuration, on `replicas` nodes.
 * A server that cannot place that many copies (one that is not a cluster, or a cluster with fewer
 * nodes up than copies, while a stream is made or its replicas change) is NATS_UNAVAILABLE naming
 * `[cluster] replicas`; with one replica the server's error goes on as it came.
 */
export async function placeStream(pending: Promise<StreamInfo>, name: string, replicas: StreamReplicas): Promise<StreamInfo> {
  try {
    return await pending;
  } catch (err) {
    if (replicas === 1) throw err;
    throw new ThymosError(
      ErrorCode.NATS_UNAVAILABLE,
      `stream ${name}: nats-server did not keep it on ${replicas} nodes ([cluster] replicas = ${replicas}): ${(err as Error).message} (it needs a nats-server cluster of at least ${replicas} nodes with JetStream, all up while a stream is made or its replicas change)`,
      { cause: err, details: { stream: name, replicas } },
    );
  }
}

/**
 * Changes stream `name` (configured as `was`) by `change`, on `replicas` nodes. When that moves it
 * to other nodes, waits up to 30 s until it has a leader and every other node that keeps it has
 * caught up: nats-server answers a change of replicas at once and copies the stream to its new
 * nodes afterwards, and until they have it the loss of the node that held it alone would lose what
 * only that node kept. A stream that takes longer goes on being copied.
 */
export async function updateStream(
  jsm: JetStreamManager,
  name: string,
  was: StreamConfig,
  replicas: StreamReplicas,
  change: Partial<StreamUpdateConfig> = {},
): Promise<void> {
  await placeStream(jsm.streams.update(name, { ...change, num_replicas: replicas }), name, replicas);
  if (was.num_replicas === replicas) return;
  const deadline = Date.now() + CATCH_UP_MS;
  while (Date.now() < deadline) {
    const cluster = (await jsm.streams.info(name)).cluster;
    const followers = cluster?.replicas ?? [];
    if (cluster?.leader && followers.length === replicas - 1 && followers.every((r) => r.current)) return;
    await sleep(100);
  }
}
