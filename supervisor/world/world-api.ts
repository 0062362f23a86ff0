import type { NatsConnection } from '@nats-io/transport-node';

import type { Logger } from '../../shared/platform/logger.js';
import { DEFAULT_FLEET_NAMES, type FleetNames } from '../../shared/protocol/fleet-names.js';
import { WorldRequestSchemas, WorldResultSchemas } from '../../shared/protocol/world-protocol.js';
import { ControlApi } from '../api/control-api.js';
import type { WorldStore } from './world-store.js';

/** The world store's API on `<fleet>.world.<op>`; call `start()` to serve it. */
export function worldControlApi(nc: NatsConnection, world: WorldStore, logger: Logger, names: FleetNames = DEFAULT_FLEET_NAMES): ControlApi<typeof WorldRequestSchemas, typeof WorldResultSchemas> {
  return new ControlApi(
    nc,
    {
      schemas: WorldRequestSchemas,
      results: WorldResultSchemas,
      subject: (op) => names.world(op),
      handlers: {
        tables: async () => world.tables(),
        get: (r) => world.get(r.table, r.id),
        set: (r) => world.set(r.table, r.id, r.fields, r.by),
        patch: (r) => world.patch(r.table, r.id, r.fields, r.by),
        delete: async (r) => ({ deleted: await world.delete(r.table, r.id) }),
        query: (r) => world.query(r),
        subscribe: (r) => world.subscribe(r),
        renew: async (r) => world.renew(r.subs),
        unsubscribe: async (r) => ({ ended: await world.unsubscribe(r.sub) }),
      },
    },
    logger,
  );
}
