import type { WorldClient } from '../../shared/nats/index.js';
import type { EventPublisher } from '../runtime/agent-links.js';

/** What an executor gets for one call, besides the validated input. */
export interface ExecutorContext {
  /** The tool's name. */
  tool: string;
  agent: string;
  caller: string;
  reason: string | undefined;
  callId: string;
  /** From the tool's `idempotencyKey` template, else the call id: a repeated call carries the same key. */
  idempotencyKey: string;
  /** Fires at the tool's timeout, or when the agent stops or the caller cancels. */
  signal: AbortSignal;
  /** The agents the chain of calls that led here passed through, first first (empty for a call from outside). */
  chain: readonly string[];
  /** When the timeout fires (epoch ms): a retry that would end later is not tried. */
  deadline: number;
  /** The value of a named environment variable; TOOL_FAILED when it is unset. */
  secret(env: string): string;
  /** One of the agent's own environment variables, as it is (for what a Subprocess passes through). */
  env(name: string): string | undefined;
  /** Takes the value of every secret the agent's tools use out of `value`, before it is quoted or cut. */
  redact<T>(value: T): T;
  /** The world store and the event stream, for a Script; NATS_UNAVAILABLE until the agent is linked. */
  world(): { world: WorldClient; publish: EventPublisher };
}
