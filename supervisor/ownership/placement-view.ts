import type { KV, KvEntry } from '@nats-io/kv';

import type { Logger } from '../../shared/platform/index.js';
import { HostLeaseSchema, PlacementSchema, readEntry } from './placement-bucket.js';

/** A host of the fleet as the placement bucket shows it. */
export interface HostRow {
  host: string;
  pid: number;
  /** When the server stored its last renewal. */
  renewed_at: string;
  /** Another host found its lease ended and marked it so. */
  expired_by: string | null;
}

/** Which host holds an agent, under which token (the placement's revision). */
export interface PlacementRow {
  host: string;
  token: number;
}

/**
 * What the fleet's placement bucket holds, kept current by a watch: each host's last renewal and
 * which host holds each agent, for status (no request per status asked). A value no Thymos wrote is
 * left out and logged.
 */
export class PlacementView {
  readonly #hosts = new Map<string, HostRow>();
  readonly #placements = new Map<string, PlacementRow>();
  #coordinator: PlacementRow | null = null;
  readonly #stop: () => void;

  private constructor(stop: () => void) {
    this.#stop = stop;
  }

  /** Watches every key of `kv` from its current values on; resolves once those are read. */
  static async open(kv: KV, logger: Logger): Promise<PlacementView> {
    const watch = await kv.watch({ key: '>' });
    const view = new PlacementView(() => watch.stop());
    let current: () => void = () => undefined;
    const caughtUp = new Promise<void>((resolve) => (current = resolve));
    void (async () => {
      for await (const entry of watch) {
        try {
          view.#take(entry);
        } catch (err) {
          logger.warn({ key: entry.key, err: (err as Error).message }, 'placement bucket: a value left out of status');
        }
        if (entry.delta === 0) current();
      }
    })();
    // An empty bucket sends nothing to catch up with.
    const status = await kv.status();
    if (status.values === 0) current();
    await caughtUp;
    return view;
  }

  hosts(): HostRow[] {
    return [...this.#hosts.values()].sort((a, b) => a.host.localeCompare(b.host));
  }

  placement(id: string): PlacementRow | undefined {
    return this.#placements.get(id);
  }

  /** The host that holds the coordinator role, under which token; null while none does. */
  coordinator(): PlacementRow | null {
    return this.#coordinator;
  }

  close(): void {
    this.#stop();
  }

  #take(entry: KvEntry): void {
    const [kind, ...rest] = entry.key.split('.');
    const name = rest.join('.');
    const gone = entry.operation !== 'PUT';
    if (kind === 'host') {
      if (gone) return void this.#hosts.delete(name);
      const lease = readEntry(entry, HostLeaseSchema);
      this.#hosts.set(name, {
        host: lease.host,
        pid: lease.pid,
        renewed_at: entry.created.toISOString(),
        expired_by: lease.expired_by ?? null,
      });
    } else if (kind === 'coordinator') {
      this.#coordinator = gone ? null : { host: readEntry(entry, PlacementSchema).host, token: entry.revision };
    } else if (kind === 'agent') {
      if (gone) return void this.#placements.delete(name);
      this.#placements.set(name, { host: readEntry(entry, PlacementSchema).host, token: entry.revision });
    }
  }
}
