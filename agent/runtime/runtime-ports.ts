import type { AgentMessage } from '../../shared/protocol/agent-message.js';

/**
 * What the runtime needs from the links the agent process attaches after start-up. The
 * runtime declares these ports; adapters (agent/links) implement them, so the runtime
 * never imports an adapter.
 */

/** What an agent's MCP tools use to reach other agents: the inbox implements it. */
export interface Messenger {
  tell(to: string, text: string): Promise<AgentMessage>;
  /** Resolves with the answer, or `undefined` when none came within `timeoutMs` (it will arrive in the inbox later). */
  ask(to: string, question: string, timeoutMs: number): Promise<AgentMessage | undefined>;
}

/** How the runtime's parts run a call: counted in flight, refused while stopping, and gated on the mode. */
export interface RuntimeGate {
  readonly id: string;
  /** Runs `fn` as a call in flight; refused with AGENT_STOPPING while the agent stops. */
  call<T>(fn: () => Promise<T>): Promise<T>;
  /** Whether the agent is active (holds dialogue, writes memory over MCP). */
  isActive(): boolean;
  /** Throws AGENT_NOT_ACTIVE, ending with `refusal`, unless the agent is active. */
  requireActive(refusal?: string): void;
}
