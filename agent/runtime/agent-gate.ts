import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { AgentMode, AgentState } from '../../shared/protocol/index.js';
import { CallGate } from './call-gate.js';
import type { RuntimeGate } from './runtime-ports.js';

/**
 * The runtime's gate: the agent's mode and status, the calls in flight (refused once it is
 * stopping), and the signal that cancels what is in flight when it is passivated or stops.
 */
export class AgentGate implements RuntimeGate {
  readonly id: string;
  mode: AgentMode;
  status: AgentState['status'] = 'starting';
  readonly #calls = new CallGate();
  /** Aborted (and replaced) when the agent is passivated or stops: cancels model calls in flight. */
  #cancel = new AbortController();

  constructor(id: string, mode: AgentMode) {
    this.id = id;
    this.mode = mode;
  }

  get inFlight(): number {
    return this.#calls.inFlight;
  }

  call<T>(fn: () => Promise<T>): Promise<T> {
    return this.#calls.run(this.id, this.status === 'stopping', fn);
  }

  isActive(): boolean {
    return this.mode === 'active';
  }

  /** Writing memory over MCP needs the agent active. */
  requireActive(refusal = 'its memory can be read, not written, over MCP'): void {
    if (this.mode !== 'active') throw new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, `${this.id} is listening (passive): ${refusal}`);
  }

  signal(): AbortSignal {
    return this.#cancel.signal;
  }

  /** Cancels what is in flight; later calls get a fresh signal. */
  cancel(why: string): void {
    this.#cancel.abort(new ThymosError(ErrorCode.CANCELLED, why));
    this.#cancel = new AbortController();
  }

  /** Resolves once no call is in flight, or after `timeoutMs`, whichever comes first. */
  drain(timeoutMs: number): Promise<boolean> {
    return this.#calls.drain(timeoutMs);
  }
}
