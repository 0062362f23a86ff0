import type { AgentMessage, AgentMode, AgentState, EventDecision, Job, RelevanceInput } from '../../shared/protocol/index.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { MemoryRecord } from '../memory/memory-record.js';
import type { JobDelivery, TalkReply, TalkRequest } from './agent-behavior.js';
import type { JobEnding } from './job-work.js';

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
  /** Aborts when the agent is passivated or stops: what is in flight should end. */
  signal(): AbortSignal;
}

/** What a link that delivers what the agent hears (world events, world changes) calls. */
export interface Hearing {
  readonly id: string;
  /**
   * Remembers what was heard; `live` marks it as news to react to rather than replayed backlog.
   * With `storeWithinMs` it resolves once the memories are recallable; `stored` says when they are in the database.
   */
  hear(memories: readonly NewMemory[], options?: { live?: boolean; storeWithinMs?: number }): Promise<MemoryRecord[]>;
  /** Resolves once everything heard so far is in the database. */
  stored(): Promise<void>;
}

/** What the inbox calls: hearing, and talking in character to answer an ask. */
export interface Conversing extends Hearing {
  getState(): AgentState;
  /** Whether a memory with this id exists: an ask already remembered was already answered. */
  hasMemory(id: string): boolean;
  talk(request: TalkRequest): Promise<TalkReply>;
}

/** What the NATS control channel calls, and the decisions it publishes. */
export interface Controllable {
  readonly id: string;
  getState(): AgentState;
  setMode(mode: AgentMode): AgentState;
  setNatsLink(link: AgentState['nats']): void;
  snapshot(reason: string): Promise<string>;
  evaluateRelevance(input: RelevanceInput): Promise<number | undefined>;
  on(event: 'decision', listener: (decision: EventDecision) => void): unknown;
}

/** What an agent's runtime tells those who listen. */
export interface RuntimeEvents {
  /** The agent's state changed (mode, status, NATS link, counts). */
  state: [AgentState];
  /** A memory was stored. */
  memory: [MemoryRecord];
  /** The agent decided what to do about a world event it heard. */
  decision: [EventDecision];
}

/** What the job worker calls: the agent's state (it takes jobs only while active and ready) and how it works one. */
export interface Working {
  readonly id: string;
  getState(): AgentState;
  /** Works one delivery of a job as the job (`job-work.ts`) until `deadline`; refused (a throw) when the agent is not active or is stopping. */
  work(job: Job, delivery: JobDelivery, deadline: AbortSignal): Promise<JobEnding>;
  on(event: 'state', listener: (state: AgentState) => void): unknown;
  off(event: 'state', listener: (state: AgentState) => void): unknown;
}
