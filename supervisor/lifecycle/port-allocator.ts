import { createServer } from 'node:net';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';

export interface PortAllocatorOptions {
  min: number;
  max: number;
  host: string;
  /** Ports pinned per agent (Pkl `port`, `[supervisor] agent_ports`): an agent gets its pin or fails. */
  pinned?: ReadonlyMap<string, number>;
}

/**
 * Hands out agent MCP ports. An agent with a pinned port gets exactly that port or a
 * PORT_IN_USE error naming the pin; any other agent gets the port it had last (the
 * registry keeps it while it is Dormant or Archived) when that is still free, else a port
 * from `[supervisor] agent_port_min..agent_port_max` that no other agent holds, is pinned
 * to, or had last — those last only when nothing else is free. A port is given only if it
 * can be bound on the host right now, so clients' URLs stay stable across wakes, restarts
 * and `thymos up`s.
 */
export class PortAllocator {
  readonly #min: number;
  readonly #max: number;
  readonly #host: string;
  readonly #pinned: ReadonlyMap<string, number>;
  readonly #pinnedPorts: Set<number>;
  readonly #held = new Set<number>();
  /** The last port of each agent that does not run now. */
  readonly #remembered = new Map<number, string>();
  #next: number;

  constructor(options: PortAllocatorOptions) {
    this.#min = options.min;
    this.#max = options.max;
    this.#host = options.host;
    this.#pinned = options.pinned ?? new Map();
    this.#pinnedPorts = new Set(this.#pinned.values());
    this.#next = options.min;
  }

  /** Marks a port as held (an adopted agent's). */
  hold(port: number): void {
    this.#held.add(port);
    this.#remembered.delete(port);
  }

  /** Notes the last port of an agent that does not run, so others are given it only as a last resort. */
  remember(id: string, port: number | null | undefined): void {
    if (port != null && !this.#held.has(port)) this.#remembered.set(port, id);
  }

  /** Gives back a stopped agent's port; it stays that agent's preferred port. */
  release(port: number | null | undefined, id?: string): void {
    if (port == null) return;
    this.#held.delete(port);
    if (id) this.#remembered.set(port, id);
  }

  /** The port agent `id` should run on; `preferred` is the port it had last. */
  /** Whether `id` has a port of its own (Pkl `port` or `[supervisor] agent_ports`), which no other replaces. */
  pinned(id: string): boolean {
    return this.#pinned.has(id);
  }

  async allocate(id: string, preferred?: number | null): Promise<number> {
    const pin = this.#pinned.get(id);
    if (pin !== undefined) {
      if (this.#held.has(pin) || !(await this.#take(pin))) {
        throw new ThymosError(
          ErrorCode.PORT_IN_USE,
          `port ${pin} pinned for ${id} (Pkl port or [supervisor] agent_ports) is in use on ${this.#host}`,
          { details: { port: pin } },
        );
      }
      return pin;
    }
    const mine = (p: number) => !this.#pinnedPorts.has(p) && (this.#remembered.get(p) ?? id) === id;
    if (
      preferred != null &&
      preferred >= this.#min &&
      preferred <= this.#max &&
      !this.#held.has(preferred) &&
      mine(preferred) &&
      (await this.#take(preferred))
    )
      return preferred;
    const size = this.#max - this.#min + 1;
    // First a port nobody had; then, if none is free, one a stopped agent had.
    for (const pass of [mine, (p: number) => !this.#pinnedPorts.has(p)]) {
      for (let i = 0; i < size; i++) {
        const port = this.#min + ((this.#next - this.#min + i) % size);
        if (this.#held.has(port) || !pass(port)) continue;
        if (await this.#take(port)) {
          this.#next = port + 1 > this.#max ? this.#min : port + 1;
          return port;
        }
      }
    }
    throw new ThymosError(
      ErrorCode.PORT_IN_USE,
      `no free agent port in ${this.#min}..${this.#max} on ${this.#host} ([supervisor] agent_port_min/agent_port_max)`,
    );
  }

  /** Holds `port` if it can be bound now (held before the check: concurrent starts must not pick the same port). */
  async #take(port: number): Promise<boolean> {
    this.#held.add(port);
    if (await canBind(this.#host, port)) {
      this.#remembered.delete(port);
      return true;
    }
    this.#held.delete(port);
    return false;
  }
}

function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
