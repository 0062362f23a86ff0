import { connect, type NatsConnection, NoRespondersError, RequestError } from '@nats-io/transport-node';

import { nkeySigner } from './nats-identity.js';

export type { NatsConnection };

export interface NatsConnectOptions {
  /** Comma-separated server URLs. */
  servers: string;
  /** Connection name shown by the server, e.g. `thymos-agent-elder_rowan`. */
  name: string;
  /** @default 250 */
  reconnectTimeWaitMs?: number;
  /** The nkey seed of the identity to connect as (`readNatsSeed`); none for a server that asks for no authentication. */
  seed?: Uint8Array;
}

/**
 * Connects to NATS and keeps reconnecting forever, including before the first
 * connection succeeds: the returned promise settles only once connected, so
 * callers that must not block race it against their own deadline.
 */
export function connectNats(options: NatsConnectOptions): Promise<NatsConnection> {
  return connect({
    servers: options.servers.split(',').map((s) => s.trim()).filter(Boolean),
    name: options.name,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: options.reconnectTimeWaitMs ?? 250,
    pingInterval: 10_000,
    // Every request would otherwise build two Error objects with stacks up front, used only if
    // it fails: a third of the router's CPU when it copies an event to 50 hearers.
    noAsyncTraces: true,
    ...(options.seed ? { authenticator: nkeySigner(options.seed) } : {}),
  });
}

/**
 * Whether the server admits `seed` (or, with none, a connection with no identity) within `ms`:
 * connects (no reconnects), tried again every 20 ms while it is refused, as it is for a moment
 * after the server's users were reloaded; `ms` 0 tries once.
 */
export async function connectsAs(servers: string, seed: Uint8Array | undefined, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const nc = await connect({
        servers: servers.split(',').map((s) => s.trim()).filter(Boolean),
        ...(seed ? { authenticator: nkeySigner(seed) } : {}),
        maxReconnectAttempts: 0,
        timeout: Math.max(500, deadline - Date.now()),
      });
      await nc.close();
      return true;
    } catch {
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** Whether a request failed because nobody listens on its subject (as opposed to a timeout). */
export function isNoResponders(err: unknown): boolean {
  return err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders());
}
