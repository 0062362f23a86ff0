import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';

import type { Logger } from '../../shared/platform/index.js';
import { parseJsonOrUndefined } from '../../shared/protocol/index.js';
import { AUTH_ERRORS } from '../nats-server/server-config.js';

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

/** At most this many refusals are logged one by one in a window; the rest are counted. */
const PER_WINDOW = 20;
const WINDOW_MS = 10_000;

/** Text a connecting stranger chose, made safe for a log line: no control characters, at most 128 of them. */
const clean = (text: string | undefined): string | undefined => {
  if (text === undefined) return undefined;
  const control = (c: string) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) < 0xa0);
  return Array.from(text.slice(0, 128), (c) => (control(c) ? '?' : c)).join('');
};

/**
 * Logs each connection the managed nats-server refuses (a key it does not know, a forged
 * signature, no identity at all), told by the server's system account on `system`, the
 * supervisor's connection as the `system` identity: a warning with the name the connection gave,
 * where it came from and the key it used (what a stranger chose is stripped of control
 * characters and cut to 128). At most 20 in 10 s are logged one by one; past that they are
 * counted, and the count is logged with the first refusal of a later window. Permission
 * violations of admitted connections are logged by the process the server tells
 * (`logRefusals`). Closing the connection ends it.
 */
export function logRefusedConnections(system: NatsConnection, logger: Logger): Subscription {
  let windowStart = 0;
  let logged = 0;
  let counted = 0;
  return system.subscribe(AUTH_ERRORS, {
    callback: (err, msg) => {
      if (err) return;
      const advisory = AuthErrorSchema.safeParse(parseJsonOrUndefined(msg.string()));
      if (!advisory.success) return;
      const now = Date.now();
      if (now - windowStart >= WINDOW_MS) {
        if (counted > 0)
          logger.warn(
            { code: 'UNAUTHORIZED', refused: counted },
            `nats-server refused ${counted} more connection(s), past ${PER_WINDOW} in ${WINDOW_MS / 1000} s, not logged one by one`,
          );
        [windowStart, logged, counted] = [now, 0, 0];
      }
      if (++logged > PER_WINDOW) {
        counted++;
        return;
      }
      const name = clean(advisory.data.client.name);
      const host = clean(advisory.data.client.host);
      const nkey = clean(advisory.data.client.user);
      const reason = clean(advisory.data.reason);
      logger.warn(
        { code: 'UNAUTHORIZED', name, from: host, nkey, reason },
        `nats-server refused a connection${name ? ` named ${name}` : ''} from ${host ?? 'an unknown host'}${nkey ? ` signed by ${nkey}` : ' with no identity'}: ${reason ?? 'no reason given'}`,
      );
    },
  });
}
