import { parseAgentArgs } from '../agent/process/agent-options.js';
import { runAgentProcess, type RunningAgent } from '../agent/process/agent-process.js';

/**
 * `thymos agent …`: runs until SIGINT/SIGTERM or a NATS `shutdown`, then exits 0.
 * Exits explicitly: the embedded database's threads can keep Node alive after close.
 */
export async function runAgentCommand(argv: string[]): Promise<number> {
  const options = parseAgentArgs(argv);
  // Signal handlers go in before start-up: without a listener a SIGTERM that arrives
  // between "ready" and the end of start-up would kill the process with no snapshot.
  let agent: RunningAgent | undefined;
  let pendingSignal: string | undefined;
  const onSignal = (signal: string) => {
    if (agent) void agent.stop(signal).catch(() => undefined);
    else pendingSignal ??= signal;
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  agent = await runAgentProcess(options);
  agent.stopped.then(
    () => process.exit(0),
    () => process.exit(1),
  );
  if (pendingSignal) void agent.stop(pendingSignal).catch(() => undefined);
  return -1;
}
