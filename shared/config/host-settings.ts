import { isIP } from 'node:net';
import { hostname } from 'node:os';

import { z } from 'zod';

/**
 * A host's name: what its log lines, audit entries, metrics and status rows say they come from.
 * One NATS subject token, so no dots.
 */
export const HostNameSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,62}$/,
    'expected a host name: a lower-case letter or digit, then up to 62 of a-z, 0-9, _ or -, e.g. "mill_2"',
  );

/** The first label of a machine's hostname, lower-cased, other characters than a-z, 0-9, _ and - as `_` (`Mill-2.example.org` → `mill-2`). */
export function defaultHostName(machine = hostname()): string {
  const label = (machine.split('.')[0] ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '_')
    .slice(0, 63);
  return /^[a-z0-9]/.test(label) ? label : `h${label}`.slice(0, 63);
}

/** The machine this process runs on. */
export const HostSettingsSchema = z
  .object({
    /**
     * This host's name, in every log line, audit entry, metric (label `host`) and status row it writes.
     * @default (the first label of the machine's hostname, lower-cased, other characters as `_`)
     */
    name: HostNameSchema.default(() => defaultHostName()),
    /**
     * The address other hosts and MCP clients reach this host's agents on: what `thymos url`,
     * `fleet.agentUrl`, `status` and an `Mcp` tool use. Required when `[agent] host` listens on
     * every interface (`0.0.0.0`).
     * @default [agent] host
     * @example "10.0.0.12"
     */
    advertise: z
      .string()
      .regex(/^[A-Za-z0-9._:[\]-]+$/, 'expected a host name or an IP address, e.g. "10.0.0.12" or "mill-2.example.org"')
      .refine((a) => !isWildcard(a), 'expected an address others reach this host on, not one that means every interface')
      .transform((a) => {
        const lower = a.toLowerCase();
        // An IPv6 address goes in a URL between brackets.
        return isIP(lower) === 6 ? `[${lower}]` : lower;
      })
      .optional(),
  })
  .strict();

/** Whether `address` names this machine only: 127.0.0.0/8, ::1 or localhost. */
export function isLoopback(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(?:\.\d{1,3}){3}$/.test(bare);
}

/**
 * Whether what crosses a NATS link to `servers` (a URL, or several comma-separated) stays private:
 * every server on loopback, or TLS (`[nats] tls_*` given, or `tls://` servers).
 */
export function natsLinkPrivate(servers: string, tls: boolean): boolean {
  const urls = servers.split(',').map((u) => u.trim());
  if (tls || urls.every((u) => u.startsWith('tls://'))) return true;
  return urls.every((u) => {
    try {
      return isLoopback(new URL(u.includes('://') ? u : `nats://${u}`).hostname);
    } catch {
      return false;
    }
  });
}

/**
 * Servers as `nats://host:port` (or `tls://`, `host:port`), comma-separated: no user or password
 * in the URL (identities and credentials are the fleet's way in) and no backslash, which URL
 * parsers read otherwise than the NATS client.
 */
export const NATS_URL = /^[^@\\\s]+$/;
export const NATS_URL_MESSAGE =
  'expected servers as nats://host:port, without a user, a password or a backslash (the fleet signs in with [nats] identities or credentials)';

/** Every interface: an address that cannot be reached as such. */
export function isWildcard(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 4) return bare.split('.').every((part) => Number(part) === 0);
  if (isIP(bare) === 6) return /^[0:]+$/.test(bare);
  return bare === '0';
}
