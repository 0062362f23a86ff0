import { createServer } from 'node:net';

import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';

/**
 * Hands out agent MCP ports from a range. A port is given only if no agent of the
 * fleet holds it and it can be bound on the host right now; an agent keeps its
 * previous port when that is still free, so clients' URLs stay stable.
 */
export class PortAllocator {
  readonly #min: number;
  readonly #max: number;
  readonly #host: string;
  readonly #held = new Set<number>();
  #next: number;

  constructor(options: { min: number; max: number; host: string }) {
    this.#min = options.min;
    this.#max = options.max;
    this.#host = options.host;
    this.#next = options.min;
  }

  /** Marks a port as held (an adopted agent's). */
  hold(port: number): void {
    this.#held.add(port);
  }

  release(port: number | null | undefined): void {
    if (port != null) this.#held.delete(port);
  }

  async allocate(preferred?: number | null): Promise<number> {
    if (preferred != null && preferred >= this.#min && preferred <= this.#max && !this.#held.has(preferred) && (await canBind(this.#host, preferred))) {
      this.#held.add(preferred);
      return preferred;
    }
    const size = this.#max - this.#min + 1;
    for (let i = 0; i < size; i++) {
      const port = this.#min + ((this.#next - this.#min + i) % size);
      if (this.#held.has(port)) continue;
      this.#held.add(port); // before the await: concurrent starts must not pick the same port
      if (await canBind(this.#host, port)) {
        this.#next = port + 1 > this.#max ? this.#min : port + 1;
        return port;
      }
      this.#held.delete(port);
    }
    throw new ThymosError(ErrorCode.PORT_IN_USE, `no free agent port in ${this.#min}..${this.#max} on ${this.#host} ([supervisor] agent_port_min/agent_port_max)`);
  }
}

function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
