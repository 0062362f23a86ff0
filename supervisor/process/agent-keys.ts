import type { NatsConnection } from '@nats-io/transport-node';

import { type FleetPaths, Pm2Names, type ThymosConfig } from '../../shared/config/index.js';
import type { DomainSchema } from '../../shared/domain/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { FleetNames } from '../../shared/protocol/index.js';
import { FleetKeys } from '../nats-server/fleet-keys.js';
import { ProcessManager } from '../pm2/process-manager.js';

/**
 * With the agents' keys kept in the cluster (`keysInCluster`), as the supervisor starts (standing by
 * or coordinating): the keys this host holds of the domain's agents are put in the key bucket, and
 * each agent key the bucket holds of an agent pm2 does not run here is deleted from this host, which
 * takes it again from the bucket as the agent starts here. A key the bucket does not hold is kept.
 */
export async function openAgentKeys(o: {
  config: ThymosConfig;
  paths: FleetPaths;
  names: FleetNames;
  logger: Logger;
  nc: NatsConnection;
  domain: DomainSchema;
  secret: Buffer;
}): Promise<FleetKeys> {
  const { config, paths, logger } = o;
  const keys = await FleetKeys.open({ nc: o.nc, names: o.names, replicas: config.cluster.replicas, secret: o.secret });
  const { published, replaced } = await keys.publish(paths.data, Object.keys(o.domain.agents));
  // Any agent pm2 has not stopped (online, or being restarted) still needs its key.
  const processes = await ProcessManager.connect(paths.pm2Home);
  let running: Set<string>;
  try {
    running = new Set((await processes.list()).filter((p) => p.status !== 'stopped' && p.status !== 'errored').map((p) => p.name));
  } finally {
    processes.disconnect();
  }
  const deleted = await keys.keepOnly(paths.data, (id) => running.has(Pm2Names.agent(id)));
  logger.info({ published, deleted }, "the agents' NATS keys are kept in the cluster's key bucket");
  if (replaced.length > 0)
    logger.warn(
      { agents: replaced },
      "the cluster's key bucket held other keys for these agents than this host did: the bucket's are kept (run thymos nats-config to write the account with them)",
    );
  return keys;
}
