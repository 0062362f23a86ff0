import type { NatsConnection } from '@nats-io/transport-node';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import { DEFAULT_FLEET_NAMES, type FleetNames, WorldRequestSchemas, WorldResultSchemas } from '../../shared/protocol/index.js';
import { ControlApi, type Requester } from '../api/control-api.js';
import type { WorldStore } from './world-store.js';

/**
 * The world store's API on `<fleet>.world.<op>` (the client's), and on each agent's own
 * `<fleet>.agent.<id>.world.<op>`; call `start()` to serve it. What an agent asks is its own: it
 * writes as itself (`by`), owns the subscriptions it makes (`owner`), and renews or ends only
 * those; a request that names another is UNAUTHORIZED.
 */
export function worldControlApi(
  nc: NatsConnection,
  world: WorldStore,
  logger: Logger,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): ControlApi<typeof WorldRequestSchemas, typeof WorldResultSchemas> {
  return new ControlApi(
    nc,
    {
      schemas: WorldRequestSchemas,
      results: WorldResultSchemas,
      subject: (op) => names.world(op),
      agents: { subject: (id, op) => names.agentWorld(id, op), ops: new Set(Object.keys(WorldRequestSchemas)) },
      handlers: {
        tables: async () => world.tables(),
        get: (r) => world.get(r.table, r.id),
        set: (r, _p, from) => world.set(r.table, r.id, r.fields, itself(from, r.by, 'by')),
        patch: (r, _p, from) => world.patch(r.table, r.id, r.fields, itself(from, r.by, 'by')),
        delete: async (r) => ({ deleted: await world.delete(r.table, r.id) }),
        query: (r) => world.query(r),
        subscribe: (r, _p, from) => world.subscribe({ ...r, owner: itself(from, r.owner, 'owner') }),
        renew: async (r, _p, from) => world.renew(r.subs, from.agent),
        unsubscribe: async (r, _p, from) => ({ ended: await world.unsubscribe(r.sub, from.agent) }),
      },
    },
    logger,
  );
}

/** The name a request gives at `path` (`by`, `owner`), which for an agent must be its own id. */
function itself(from: Requester, named: string, path: string): string {
  if (from.agent !== undefined && named !== from.agent) {
    throw new ThymosError(
      ErrorCode.UNAUTHORIZED,
      `${path}: ${from.who} acts as itself on the world store ("${from.agent}"), not as "${named}"`,
      { location: { path } },
    );
  }
  return named;
}
