import { resolveConfigFile } from '../shared/config/index.js';
import { ensureNatsServer, natsServerVersion } from '../supervisor/nats-server/server-binary.js';
import { commandNamed } from './command-book.js';
import { parseCommandArgs } from './fleet-args.js';

/**
 * `thymos setup`: what the fleet needs from this machine besides the npm packages, which is
 * nats-server unless `[nats] url` is set. Installed where this process may install it (Debian
 * as root), said first; anywhere else NATS_SERVER_MISSING naming the command (exit 4).
 * Installs nothing when it is there already.
 */
export async function runSetupCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandArgs(argv, commandNamed('setup')!) as { values: { config?: string; json?: boolean } };
  const config = resolveConfigFile(values.config);
  if (config.nats.url) {
    if (values.json) process.stdout.write(`${JSON.stringify({ nats_server: { needed: false, nats_url: config.nats.url } })}\n`);
    else process.stdout.write(`nats-server: not needed ([nats] url = ${config.nats.url})\n`);
    return 0;
  }
  // Steps go to stderr with --json, so stdout stays one JSON document.
  const say = (line: string) => (values.json ? process.stderr : process.stdout).write(`${line}\n`);
  const { path, installed } = await ensureNatsServer({ onStep: say });
  const version = (await natsServerVersion(path)) ?? null;
  if (values.json) process.stdout.write(`${JSON.stringify({ nats_server: { needed: true, path, version, installed } })}\n`);
  else say(`nats-server: ${path}${version ? ` (${version})` : ''}`);
  return 0;
}
