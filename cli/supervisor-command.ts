import { fleetNatsUrl, resolveConfigFile } from '../shared/config/index.js';
import { type RunningSupervisor, runSupervisorProcess } from '../supervisor/process/supervisor-process.js';
import { commandNamed } from './command-book.js';
import { parseCommandArgs } from './fleet-args.js';

/** `thymos supervisor`: runs until SIGINT/SIGTERM, then exits 0. */
export async function runSupervisorCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandArgs(argv, commandNamed('supervisor')!) as { values: { config?: string; 'nats-url'?: string } };
  const config = resolveConfigFile(values.config);
  const natsUrl = values['nats-url'] ?? fleetNatsUrl(config);
  let supervisor: RunningSupervisor | undefined;
  let pending: string | undefined;
  // A supervisor standing by for the coordinator role (placement by lease) stops waiting at a signal.
  const standing = new AbortController();
  const onSignal = (signal: string) => {
    if (supervisor) void supervisor.stop(signal);
    else {
      pending ??= signal;
      standing.abort();
    }
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  try {
    supervisor = await runSupervisorProcess({ config, natsUrl, signal: standing.signal });
  } catch (err) {
    if (pending) process.exit(0);
    throw err;
  }
  // The embedded database's threads keep Node alive after close: exit explicitly.
  supervisor.stopped.then(
    () => process.exit(0),
    () => process.exit(1),
  );
  if (pending) void supervisor.stop(pending);
  return -1;
}
