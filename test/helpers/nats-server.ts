import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { parseJsonOrUndefined } from '../../shared/protocol/parse-json.js';
import { stopChild } from './stop-child.js';
import { tempDir } from './temp-dir.js';

/** A real nats-server on a random loopback port, stopped by its pid. */
export interface TestNatsServer {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** Stops it (SIGTERM, then SIGKILL). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
}

export async function startNatsServer(options: { jetstream?: boolean; config?: string } = {}): Promise<TestNatsServer> {
  const dir = tempDir('thymos-nats-');
  let child: ChildProcess | undefined;
  let port = -1;

  const launch = async () => {
    // A configuration file (users, JetStream, its own listen address) replaces the address flags.
    const args = options.config
      ? ['-c', options.config, '--ports_file_dir', dir]
      : ['-a', '127.0.0.1', '-p', String(port), '--ports_file_dir', dir];
    if (options.jetstream) args.push('-js', '-sd', join(dir, 'js'));
    for (const f of readdirSync(dir)) if (f.endsWith('.ports')) rmSync(join(dir, f));
    child = spawn('nats-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`nats-server exited: ${stderr}`);
      const file = readdirSync(dir).find((f) => f.endsWith('.ports'));
      // nats-server creates the file before it writes it: an empty or partial one is read again.
      const ports = file ? (parseJsonOrUndefined(readFileSync(join(dir, file), 'utf8')) as { nats?: string[] } | undefined) : undefined;
      if (ports?.nats?.[0]) {
        port = Number(new URL(ports.nats[0]).port);
        return;
      }
      await sleep(20);
    }
    throw new Error(`nats-server did not start: ${stderr}`);
  };

  await launch();
  const server: TestNatsServer = {
    get url() {
      return `nats://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get pid() {
      return child?.pid ?? -1;
    },
    async stop() {
      await stopChild(child, 3000);
    },
    async start() {
      await launch();
    },
  };
  return server;
}
