import { randomBytes } from 'node:crypto';

import {
  type Authenticator,
  connect,
  credsAuthenticator,
  type NatsConnection,
  NoRespondersError,
  PermissionViolationError,
  RequestError,
  type TlsOptions,
} from '@nats-io/transport-node';

import type { NatsTlsFiles } from '../config/thymos-config.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import type { Logger } from '../platform/logger.js';
import { type NatsIdentity, natsInboxPrefix, nkeySigner } from './nats-identity.js';

export type { NatsConnection };

/** What a connection proves itself with: an identity's key or credentials file, TLS files, both or neither (`fleetNatsLink`). */
export interface NatsLink {
  /** The nkey seed of the identity to connect as (`readNatsSeed`); none for a server that asks for no authentication. */
  seed?: Uint8Array | undefined;
  /** The text of a NATS credentials file (a user JWT and its seed), for a server in operator mode, instead of `seed`. */
  creds?: Uint8Array | undefined;
  /** TLS files (`[nats] tls_*`): given, the server must speak TLS, verified with them. */
  tls?: NatsTlsFiles | undefined;
}

export interface NatsConnectOptions extends NatsLink {
  /** Comma-separated server URLs. */
  servers: string;
  /** Connection name shown by the server, e.g. `thymos-agent-elder_rowan`. */
  name: string;
  /** @default 250 */
  reconnectTimeWaitMs?: number;
  /** Who connects: replies to its requests come to its own inboxes (`natsInboxPrefix`), the only ones its NATS user may read. */
  who?: NatsIdentity;
}

/**
 * nats.js options for a link to `servers`: TLS files given, or a `tls://` URL, make TLS required
 * (nats.js then refuses a server that offers none, rather than talk in the clear; it reads the
 * scheme of a URL as nothing more than a host and port).
 */
function linkOptions(link: NatsLink, servers: string): { authenticator?: Authenticator; tls?: TlsOptions } {
  const authenticator = link.seed ? nkeySigner(link.seed) : link.creds ? credsAuthenticator(link.creds) : undefined;
  const tls = link.tls ?? (serverList(servers).some((u) => /^tls:\/\//i.test(u)) ? {} : undefined);
  return { ...(authenticator ? { authenticator } : {}), ...(tls ? { tls: { ...tls } } : {}) };
}

/** The URLs of a comma-separated server list. */
function serverList(servers: string): string[] {
  return servers
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Connects to NATS and keeps reconnecting forever, including before the first
 * connection succeeds: the returned promise settles only once connected, so
 * callers that must not block race it against their own deadline.
 */
export function connectNats(options: NatsConnectOptions): Promise<NatsConnection> {
  return connect({
    servers: serverList(options.servers),
    name: options.name,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: options.reconnectTimeWaitMs ?? 250,
    pingInterval: 10_000,
    // Every request would otherwise build two Error objects with stacks up front, used only if
    // it fails: a third of the router's CPU when it copies an event to 50 hearers.
    noAsyncTraces: true,
    ...linkOptions(options, options.servers),
    ...(options.who ? { inboxPrefix: natsInboxPrefix(options.who) } : {}),
  });
}

/**
 * A new inbox for the answers of identity `asked` to this connection: under the connection's own
 * prefix (`connectNats`'s `who`), then the identity asked (`natsReplyPrefix`: only it may publish
 * there), then 128 random bits, so that nobody else can name it either.
 */
export function replyInbox(nc: NatsConnection, asked: NatsIdentity): string {
  // The prefix is an option of the connection, which nats.js keeps on it but not in its interface.
  const prefix = (nc as NatsConnection & { options?: { inboxPrefix?: string } }).options?.inboxPrefix || '_INBOX';
  return `${prefix}.${asked}.${randomBytes(16).toString('hex')}`;
}

/**
 * Whether the server admits `link` (with no key, a connection with no identity) within `ms`:
 * connects (no reconnects), tried again every 20 ms while it is refused, as it is for a moment
 * after the server's users were reloaded; `ms` 0 tries once.
 */
export async function connectsAs(servers: string, link: NatsLink, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if ((await admission(servers, link, Math.max(500, deadline - Date.now()))).outcome === 'admitted') return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * What the server at `servers` does with a connection as `link`: admits it, refuses it
 * (`Authorization Violation`), or cannot be reached within `ms` (down, a wrong URL, TLS that
 * fails either way), with nats.js's reason. One try.
 */
export async function admission(
  servers: string,
  link: NatsLink,
  ms: number,
): Promise<{ outcome: 'admitted' | 'refused' | 'unreachable'; reason?: string }> {
  try {
    const nc = await connectOnce(servers, link, ms);
    await nc.close();
    return { outcome: 'admitted' };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { outcome: /authorization violation/i.test(reason) ? 'refused' : 'unreachable', reason };
  }
}

/**
 * A connection for one short task (a command's): tried once, failing within `ms` rather than
 * trying again, and never reconnecting. With `who`, its replies come to that identity's inboxes.
 */
export function connectOnce(servers: string, link: NatsLink, ms: number, who?: NatsIdentity): Promise<NatsConnection> {
  return connect({
    servers: serverList(servers),
    ...linkOptions(link, servers),
    maxReconnectAttempts: 0,
    timeout: ms,
    ...(who ? { inboxPrefix: natsInboxPrefix(who) } : {}),
  });
}

/** Whether a request failed because nobody listens on its subject (as opposed to a timeout). */
export function isNoResponders(err: unknown): boolean {
  return err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders());
}

/**
 * Logs, as an error, each thing nats-server refuses this connection: a publish or subscription
 * its NATS user may not make (`natsPermissions`). nats-server says so only to the connection it
 * refused, and a refused publish fails nothing else, so this is where it shows. Ends with the
 * connection.
 */
export function logRefusals(nc: NatsConnection, logger: Logger, who: string): void {
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'error' && s.error instanceof PermissionViolationError) {
        logger.error(
          { code: ErrorCode.UNAUTHORIZED, operation: s.error.operation, subject: s.error.subject },
          `nats-server refused ${who} a ${s.error.operation} on ${s.error.subject}: its NATS user may not`,
        );
      }
    }
  })();
}

/** The coded error for a request nats-server refused (its user may not publish there), or undefined for any other failure. */
export function refusal(err: unknown, subject: string): ThymosError | undefined {
  const violation = permissionViolation(err);
  if (!violation) return undefined;
  return new ThymosError(
    ErrorCode.UNAUTHORIZED,
    `nats-server refused the ${violation.operation} on ${violation.subject || subject}: this process's NATS identity may not (see "Who may connect to the fleet's NATS" in docs/identity-and-security.md)`,
    {
      cause: err,
      details: { subject: violation.subject || subject },
    },
  );
}

/** The permission violation behind a failed request (nats.js wraps it in a RequestError), if that is why it failed. */
export function permissionViolation(err: unknown): PermissionViolationError | undefined {
  if (err instanceof PermissionViolationError) return err;
  return err instanceof RequestError && err.cause instanceof PermissionViolationError ? err.cause : undefined;
}
