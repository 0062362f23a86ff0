import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

import type { KV, KvEntry } from '@nats-io/kv';
import { TimeoutError } from '@nats-io/transport-node';
import { z } from 'zod';

import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { lostRace } from '../../shared/nats/index.js';
import { type FleetNames, parseJsonOrUndefined } from '../../shared/protocol/index.js';

/** The keys and values of the fleet's placement bucket, and the reads and writes of a host's lease there. */

/** Who takes a host's lease, and for how long. */
export interface LeaseOptions {
  names: FleetNames;
  /** This host's `[host] name`. */
  host: string;
  /** How long a host's lease lasts after the server stored its last renewal. */
  leaseMs: number;
  /**
   * The fleet's data directory on this host, whose data lock the caller holds: a lease of this host
   * name left by an earlier run from the same directory on the same machine is taken over at once
   * (that run is gone, or it would hold the lock), rather than waited out.
   */
  dataDir: string;
}

/**
 * This machine, as long as it runs: its hostname and Linux boot id (two machines cloned with one
 * hostname differ in it). Where there is no boot id, a value of this process alone: an earlier run's
 * lease is then waited out rather than taken over.
 */
const MACHINE = (() => {
  try {
    return `${hostname()}/${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}`;
  } catch {
    return `${hostname()}/${randomUUID()}`;
  }
})();

/** A host's lease: who holds it (its `run`, new at every start) and, once another host found it expired, by whom. */
export const HostLeaseSchema = z.object({
  host: z.string(),
  run: z.string(),
  pid: z.number().int(),
  /** The machine (`MACHINE`) and data directory of the supervisor that holds it. */
  machine: z.string(),
  data: z.string(),
  expired_by: z.string().optional(),
});
export type HostLease = z.infer<typeof HostLeaseSchema>;

/** Which host holds an agent: the host and the run of it that claimed the agent. */
export const PlacementSchema = z.object({ host: z.string(), run: z.string() });
export type Placement = z.infer<typeof PlacementSchema>;

/**
 * The value of `entry`, checked: a value no Thymos wrote is refused (NOT_OWNER, naming the key),
 * never taken for a lease or a placement, so an agent under it is neither claimed nor started.
 */
export function readEntry<T>(entry: KvEntry, schema: z.ZodType<T>): T {
  const raw = parseJsonOrUndefined(entry.string());
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new ThymosError(
      ErrorCode.NOT_OWNER,
      `${entry.bucket} holds at ${entry.key} a value Thymos did not write (${describeIssues(parsed.error, raw)}): delete the key to free it`,
    );
  return parsed.data;
}

/** How long opening the bucket and taking the lease may go on through JetStream's timeouts (a leader being elected). */
export const OPEN_WITHIN_MS = 30_000;
/** How many times a claim reads again after losing a compare-and-set race before it gives up. */
export const CLAIM_TRIES = 5;

export const hostKey = (host: string) => `host.${host}`;
export const agentKey = (id: string) => `agent.${id}`;
export const clockKey = (host: string) => `clock.${host}`;

/**
 * Takes host `options.host`'s lease under a new run: the key is made when missing, and taken over
 * when its lease ended (`leaseExpired`), was marked expired, or is `ownRun` (this host's earlier
 * run). A live lease of another run is refused (`SUPERVISOR_ALREADY_RUNNING`, naming its pid).
 */
export async function takeLease(
  kv: KV,
  options: LeaseOptions,
  ownRun?: string,
): Promise<{ run: string; revision: number; sentAt: number }> {
  const run = randomUUID();
  const lease = hostLease(options, run);
  for (let tries = 0; ; tries++) {
    const entry = await kv.get(hostKey(options.host));
    const sentAt = Date.now();
    try {
      if (!entry || entry.operation !== 'PUT') {
        const revision = entry
          ? await kv.update(hostKey(options.host), json(lease), entry.revision)
          : await kv.create(hostKey(options.host), json(lease));
        return { run, revision, sentAt };
      }
      const other = readEntry(entry, HostLeaseSchema);
      // This supervisor's earlier run, or an earlier supervisor of this data directory on this machine (this one holds its data lock): over.
      const ours = other.run === ownRun || (other.machine === MACHINE && other.data === options.dataDir);
      if (!ours && !other.expired_by && !(await leaseExpired(kv, entry, options)))
        throw new ThymosError(
          ErrorCode.SUPERVISOR_ALREADY_RUNNING,
          `the host name "${options.host}" holds a live lease in ${options.names.placementBucket}, pid ${other.pid}'s: each host of a fleet needs its own [host] name`,
          { details: { host: options.host, pid: other.pid } },
        );
      return { run, revision: await kv.update(hostKey(options.host), json(lease), entry.revision), sentAt };
    } catch (err) {
      if (!lostRace(err) || tries >= CLAIM_TRIES) throw err;
    }
  }
}

export function hostLease(options: LeaseOptions, run: string): HostLease {
  return { host: options.host, run, pid: process.pid, machine: MACHINE, data: options.dataDir };
}

/**
 * Whether the lease `entry` holds ended, on the server's clock: the time the server stamped on it
 * against the time it stamps now on a write of the judge's own (`clock.<judge>`).
 */
export async function leaseExpired(kv: KV, entry: KvEntry, options: LeaseOptions, judge = options.host): Promise<boolean> {
  const revision = await kv.put(clockKey(judge), '');
  const now = await kv.get(clockKey(judge), { revision });
  if (!now) return false;
  return now.created.getTime() - entry.created.getTime() > options.leaseMs;
}

/** Runs `fn` again while JetStream answers it with a timeout (a stream leader being elected), for up to `ms`. */
export async function throughTimeouts<T>(ms: number, what: string, fn: () => Promise<T>): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof TimeoutError)) throw err;
      if (performance.now() >= deadline)
        throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `JetStream did not answer within ${ms} ms, waiting for ${what}`, { cause: err });
    }
  }
}

export function json(value: object): string {
  return JSON.stringify(value);
}

/**
 * Deletes every key of `kv` whose placement names `host` (its agents, and the coordinator role), each
 * by compare-and-set at the revision read: a key another host took meanwhile is left to it. For a
 * host that gives its runs' placements up once their agents have passed their fence, so no other
 * host has to wait for its lease to take them.
 */
export async function releaseHostPlacements(kv: KV, host: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of await kv.keys()) if (key === 'coordinator' || key.startsWith('agent.')) keys.push(key);
  const released: string[] = [];
  for (const key of keys) {
    const entry = await kv.get(key);
    if (entry?.operation !== 'PUT' || PlacementSchema.safeParse(parseJsonOrUndefined(entry.string())).data?.host !== host) continue;
    try {
      await kv.delete(key, { previousSeq: entry.revision });
      released.push(key);
    } catch (err) {
      if (!lostRace(err)) throw err;
    }
  }
  return released;
}
