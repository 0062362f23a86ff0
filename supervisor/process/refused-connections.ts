import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';

import type { Logger } from '../../shared/platform/logger.js';
import { parseJsonOrUndefined } from '../../shared/protocol/parse-json.js';

/** Every server's advisory of a connection it refused: `$SYS.SERVER.<server>.CLIENT.AUTH.ERR`. */
export const AUTH_ERRORS = '$SYS.SERVER.*.CLIENT.AUTH.ERR';

/** The part of nats-server's `client_disconnect` advisory that says who was refused. */
const AuthErrorSchema = z.looseObject({
  client: z.looseObject({
    host: z.string().optional(),
    /** The connection's name, e.g. `thymos-agent-elder_rowan`: what it said it was. */
    name: z.string().optional(),
    /** The public key it signed in with, when it gave one. */
    user: z.string().optional(),
  }),
  reason: z.string().optional(),
});

/**
 * Logs each connection the managed nats-server refuses (a key it does not know, a forged
 * signature, no identity at all), told by the server's system account on `system`, the
 * supervisor's connection as the `system` identity: a warning with the name the connection gave,
 * where it came from and the key it used. Permission violations of admitted connections are
 * logged by the process the server tells (`logRefusals`). Closing the connection ends it.
 */
export function logRefusedConnections(system: NatsConnection, logger: Logger): Subscription {
  return system.subscribe(AUTH_ERRORS, {
    callback: (err, msg) => {
      if (err) return;
      const advisory = AuthErrorSchema.safeParse(parseJsonOrUndefined(msg.string()));
      if (!advisory.success) return;
      const { client, reason } = advisory.data;
      logger.warn(
        { code: 'UNAUTHORIZED', name: client.name, host: client.host, nkey: client.user, reason },
        `nats-server refused a connection${client.name ? ` named ${client.name}` : ''} from ${client.host ?? 'an unknown host'}${client.user ? ` signed by ${client.user}` : ' with no identity'}: ${reason ?? 'no reason given'}`,
      );
    },
  });
}
