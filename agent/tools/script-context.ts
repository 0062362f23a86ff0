import type { WorldClient } from '../../shared/nats/index.js';
import type { EventPublisher } from '../runtime/agent-links.js';
import type { ScriptCallFacts } from './script-messages.js';

/** What a Script tool's function is called with, after its validated input: the call's facts, and what it may reach. */
export interface ScriptContext extends ScriptCallFacts {
  /** Fires at the tool's timeout (or when the agent stops, or the caller cancels): stop work and return. */
  signal: AbortSignal;
  /** The shared world store, as the agent (reads and writes through the supervisor); NATS_UNAVAILABLE while the agent has no link. */
  world: Pick<WorldClient, 'get' | 'query' | 'set' | 'patch' | 'delete' | 'tables'>;
  /** Publishes a world event as the agent. */
  publish: EventPublisher;
}

/** A Script tool's function. */
export type ScriptFunction = (input: Record<string, unknown>, context: ScriptContext) => unknown;
