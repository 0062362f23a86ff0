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
  claims?: WorldClaims,
): ControlApi<typeof WorldRequestSchemas, typeof WorldResultSchemas> {
  /** Under placement by lease, an agent writes only under the claim it holds now. */
  const current = (from: Requester, token: number | undefined) => {
    if (claims && from.agent !== undefined) underCurrentClaim(claims, from.agent, token);
  };
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
        set: (r, _p, from) => {
          current(from, r.token);
          return world.set(r.table, r.id, r.fields, itself(from, r.by, 'by'));
        },
        patch: (r, _p, from) => {
          current(from, r.token);
          return world.patch(r.table, r.id, r.fields, itself(from, r.by, 'by'));
        },
        delete: async (r, _p, from) => {
          current(from, r.token);
          return { deleted: await world.delete(r.table, r.id) };
        },
        query: (r) => world.query(r),
        subscribe: (r, _p, from) => world.subscribe({ ...r, owner: itself(from, r.owner, 'owner') }),
        renew: async (r, _p, from) => world.renew(r.subs, from.agent),
        unsubscribe: async (r, _p, from) => ({ ended: await world.unsubscribe(r.sub, from.agent) }),
      },
    },
    logger,
  );
}

/** The claims of a fleet under placement by lease, as the world store checks an agent's write against them. */
export interface WorldClaims {
  /** The token of the claim held on `id` now, and of the one it took over on this host (an agent adopted still runs under that). */
  current(id: string): { token: number | undefined; previous: number | undefined };
}

/**
 * NOT_OWNER unless `token` is agent `id`'s current claim (or the one that claim took over on this
 * host): a write from a copy whose lease was lost, or from an agent started under an older claim,
 * changes nothing.
 */
function underCurrentClaim(claims: WorldClaims, id: string, token: number | undefined): void {
  const { token: held, previous } = claims.current(id);
  if (held !== undefined && token !== undefined && (token === held || token === previous)) return;
  throw new ThymosError(
    ErrorCode.NOT_OWNER,
    held === undefined
      ? `${id} is not held by this supervisor (placement by lease): its world writes are refused`
      : `${id} wrote under claim ${token ?? 'none'}, not the current one (${held}): refused, as from a copy whose lease was lost`,
    { location: { path: 'token' } },
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
