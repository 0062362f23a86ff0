import { connect as natsConnect, type NatsConnection, nkeyAuthenticator, PermissionViolationError } from '@nats-io/transport-node';

import { type NatsIdentity, natsInboxPrefix, readNatsSeed } from '../../shared/nats/nats-identity.js';
import { eventually } from './fleet.js';

/** A raw connection as one of a fleet's identities, and the refusals nats-server sends it. */
export interface NatsAs {
  nc: NatsConnection;
  refused: PermissionViolationError[];
}

/** Connects to `url` as `who`, with its key from `dataDir` and its own inboxes; `open` collects the connection for the test to close. */
export async function connectAs(url: string, dataDir: string, who: NatsIdentity, open: NatsConnection[]): Promise<NatsAs> {
  const nc = await natsConnect({
    servers: url,
    authenticator: nkeyAuthenticator(readNatsSeed(dataDir, who)!),
    inboxPrefix: natsInboxPrefix(who),
    maxReconnectAttempts: 0,
  });
  open.push(nc);
  const refused: PermissionViolationError[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === 'error' && s.error instanceof PermissionViolationError) refused.push(s.error);
  })();
  return { nc, refused };
}

/** Waits for nats-server to refuse `operation` on `subject` to this connection. */
export function refusedOn(
  refused: readonly PermissionViolationError[],
  operation: 'publish' | 'subscription',
  subject: string,
): Promise<true> {
  return eventually(
    () => (refused.some((r) => r.operation === operation && r.subject === subject) ? true : undefined),
    10_000,
    `nats-server to refuse the ${operation} on ${subject}`,
  );
}
