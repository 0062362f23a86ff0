import { connect, createServer } from 'node:net';

/**
 * Whether `host:port` refuses a TCP connection right now (nothing listens there), within `ms`.
 * An accepted connection, a timeout or any other error is not a refusal: only a certain "no"
 * lets a caller fail at once instead of waiting for a server that may be coming up.
 */
export function refusesConnections(host: string, port: number, ms = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (refused: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(refused);
    };
    const timer = setTimeout(() => done(false), ms);
    socket.once('connect', () => done(false));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED'));
  });
}

/** Whether another process holds `host:port` now (binding it fails with EADDRINUSE); other bind errors are thrown. */
export function portTaken(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(true) : reject(err)));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(false)));
  });
}
