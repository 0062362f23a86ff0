import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';

import { portTaken as portTakenOn } from '../../shared/platform/port-probe.js';

/** A port free on 127.0.0.1 right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Whether another process holds `port` on 127.0.0.1 (binding it fails with EADDRINUSE). */
export function portTaken(port: number): Promise<boolean> {
  return portTakenOn('127.0.0.1', port);
}
