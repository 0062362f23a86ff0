import { parseArgs } from 'node:util';

import type { RunningAgent } from '../agent/process/agent-process.js';
import { runSpareProcess } from '../agent/process/spare-process.js';
import { ErrorCode, ThymosError } from '../shared/errors/errors.js';

const SPARE_USAGE = 'usage: thymos spare --slot NAME --nats-url URL [--config FILE]';

/**
 * `thymos spare …`: a warm spare of the supervisor's pool (`[supervisor] pool_size`). It waits
 * for one claim, then runs that agent until SIGINT/SIGTERM or a NATS `shutdown` and exits; a
 * spare that is never claimed exits 0 on a signal.
 */
export async function runSpareCommand(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: { slot: { type: 'string' }, 'nats-url': { type: 'string' }, config: { type: 'string' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new ThymosError(ErrorCode.USAGE, `${(err as Error).message}\n${SPARE_USAGE}`, { cause: err });
  }
  const slot = values.slot;
  const natsUrl = values['nats-url'];
  if (typeof slot !== 'string' || !/^[a-z0-9-]{1,64}$/.test(slot) || typeof natsUrl !== 'string' || natsUrl === '') {
    throw new ThymosError(ErrorCode.USAGE, `--slot (letters, digits and -) and --nats-url are required\n${SPARE_USAGE}`);
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
    // The claim was answered with the error; a spare that failed its claim is done.
    () => process.exit(1),
  );
  return -1;
}
