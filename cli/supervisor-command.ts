import { parseArgs } from 'node:util';

import { fleetNatsUrl } from '../shared/config/fleet-runtime.js';
import { resolveConfigFile } from '../shared/config/thymos-config.js';
import { ErrorCode, ThymosError } from '../shared/errors/errors.js';
import { type RunningSupervisor, runSupervisorProcess } from '../supervisor/process/supervisor-process.js';

const USAGE = 'usage: thymos supervisor [--config FILE] [--nats-url URL]   (run by thymos up under pm2)';

/** `thymos supervisor`: runs until SIGINT/SIGTERM, then exits 0. */
export async function runSupervisorCommand(argv: string[]): Promise<number> {
  let values: { config?: string; 'nats-url'?: string };
  try {
    ({ values } = parseArgs({ args: argv, options: { config: { type: 'string' }, 'nats-url': { type: 'string' } }, strict: true }));
  } catch (err) {
    throw new ThymosError(ErrorCode.USAGE, `${(err as Error).message}\n${USAGE}`, { cause: err });
  }
  const config = resolveConfigFile(values.config);
  const natsUrl = values['nats-url'] ?? fleetNatsUrl(config);
  let supervisor: RunningSupervisor | undefined;
  let pending: string | undefined;
  const onSignal = (signal: string) => {
    if (supervisor) void supervisor.stop(signal);
    else pending ??= signal;
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  supervisor = await runSupervisorProcess({ config, natsUrl });
  // The embedded database's threads keep Node alive after close: exit explicitly.
  supervisor.stopped.then(
    () => process.exit(0),
    () => process.exit(1),
  );
  if (pending) void supervisor.stop(pending);
  return -1;
}
