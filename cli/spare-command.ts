import type { RunningAgent } from '../agent/process/agent-process.js';
import { runSpareProcess } from '../agent/process/spare-process.js';
import { ErrorCode, exitCodeFor, ThymosError, toThymosError } from '../shared/errors/index.js';
import { commandNamed, usageLine } from './command-book.js';
import { parseCommandArgs } from './fleet-args.js';

/**
 * `thymos spare …`: a warm spare of the supervisor's pool (`[supervisor] pool_size`). It waits
 * for one claim, then runs that agent until SIGINT/SIGTERM or a NATS `shutdown` and exits; a
 * spare that is never claimed exits 0 on a signal.
 */
export async function runSpareCommand(argv: string[]): Promise<number> {
  const spec = commandNamed('spare')!;
  const { values } = parseCommandArgs(argv, spec);
  const slot = values.slot;
  const natsUrl = values['nats-url'];
  if (typeof slot !== 'string' || !/^[a-z0-9-]{1,64}$/.test(slot) || typeof natsUrl !== 'string' || natsUrl === '') {
    throw new ThymosError(ErrorCode.USAGE, `--slot (letters, digits and -) and --nats-url are required\nusage: ${usageLine(spec)}`);
  }
  let agent: RunningAgent | undefined;
  let close: (() => Promise<void>) | undefined;
  let pendingSignal: string | undefined;
  const onSignal = (signal: string) => {
    if (agent) void agent.stop(signal).catch(() => undefined);
    else if (close) void close().then(() => process.exit(0));
    else pendingSignal ??= signal;
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  const spare = await runSpareProcess({ slot, natsUrl, config: typeof values.config === 'string' ? values.config : undefined });
  close = spare.close;
  if (pendingSignal) onSignal(pendingSignal);
  spare.agent.then(
    (running) => {
      agent = running;
      running.stopped.then(
        () => process.exit(0),
        () => process.exit(1),
      );
      if (pendingSignal) void running.stop(pendingSignal).catch(() => undefined);
    },
    // The claim was answered with the error; a spare that failed its claim is done, with the error's
    // exit code (5 for a lease that ended: pm2, restarting it on its claim file, does not try again).
    (err: unknown) => process.exit(exitCodeFor(toThymosError(err).code)),
  );
  return -1;
}
