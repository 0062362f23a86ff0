import type { ThymosConfig } from '../../shared/config/index.js';
import { type Logger, processCpuMs } from '../../shared/platform/index.js';
import type { AgentControlChannel } from '../links/agent-control-channel.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';

/** What a running agent holds that its stop releases, in the order it releases them. */
export interface AgentShutdownParts {
  config: ThymosConfig;
  logger: Logger;
  runtime: AgentRuntime;
  channel: AgentControlChannel | undefined;
  /** The readers of events, inbox and world watches. */
  listeners: ReadonlyArray<{ close(): Promise<void> }>;
  http: { close(): Promise<void> };
  store: { writePending(): Promise<void>; close(): Promise<void> };
  lock: { release(): void };
  /** The consolidation schedule, when there is one. */
  schedule: NodeJS.Timeout | undefined;
}

/**
 * A graceful stop within `[agent] shutdown_timeout_ms`: no new calls, those in flight
 * finish (60 % of the budget), links close, a last consolidation when configured, the
 * snapshot, then HTTP, NATS, the database and the data lock. Past the budget the process
 * exits 1.
 */
export async function shutdownAgent(parts: AgentShutdownParts, reason: string): Promise<void> {
  const { config, logger, runtime, channel, listeners } = parts;
  clearInterval(parts.schedule);
  const budget = config.agent.shutdown_timeout_ms;
  logger.info({ reason, in_flight: runtime.inFlight, cpu_ms: processCpuMs() }, 'stopping');
  const hardStop = setTimeout(() => {
    logger.error({ budget_ms: budget }, 'graceful stop ran over its budget; exiting');
    process.exit(1);
  }, budget);
  runtime.setStatus('stopping');
  channel?.publishStatus('stopping');
  const drained = await runtime.drain(Math.floor(budget * 0.6));
  if (!drained) logger.warn({ in_flight: runtime.inFlight }, 'in-flight calls did not finish in time');
  runtime.links.setMessenger(undefined);
  runtime.links.setWorld(undefined);
  for (const l of listeners) await l.close();
  // What was heard live and waits to be stored is stored now, and acknowledged while the connection is open.
  await parts.store
    .writePending()
    .catch((err: unknown) =>
      logger.error({ err }, 'storing what waits failed: what was heard will be delivered again; the records of the last reads may be lost'),
    );
  if (config.memory.consolidate_on_passivate) await runtime.consolidateWithin('passivation', config.memory.consolidate_budget_ms);
  await runtime.snapshot(`stop:${reason}`).catch((err: unknown) => logger.error({ err }, 'snapshot failed'));
  await parts.http.close();
  channel?.publishStatus('stopped');
  await channel?.close();
  await parts.store.close();
  parts.lock.release();
  clearTimeout(hardStop);
  logger.info({ cpu_ms: processCpuMs() }, 'stopped');
}
