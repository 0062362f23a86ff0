import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { WorldClient } from '../../shared/nats/index.js';
import type { AgentMessage, WorldEventInput, WorldQueryInput, WorldRow } from '../../shared/protocol/index.js';
import type { Messenger, RuntimeGate } from './runtime-ports.js';

/** Publishes a world event as the agent; resolves with its id and stream sequence. */
export type EventPublisher = (event: WorldEventInput) => Promise<{ id: string; seq: number; duplicate: boolean }>;

/**
 * What an agent reaches through the fleet once NATS is up: the shared world (reads through
 * the supervisor) and other agents (messages and questions). Both are attached by the agent
 * process when its links come up, and detached when it stops.
 */
export class AgentLinks {
  readonly #gate: RuntimeGate;
  #world: WorldClient | undefined;
  #publish: EventPublisher | undefined;
  #messenger: Messenger | undefined;

  constructor(gate: RuntimeGate) {
    this.#gate = gate;
  }

  /** Links the agent to the shared world store and the event stream (set once NATS is up). */
  setWorld(world: WorldClient | undefined, publish?: EventPublisher): void {
    this.#world = world;
    this.#publish = publish;
  }

  /** What a Script tool reaches: the world store and the event stream; NATS_UNAVAILABLE until the agent is linked. */
  toolWorld(): { world: WorldClient; publish: EventPublisher } {
    if (!this.#world || !this.#publish)
      throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `${this.#gate.id} has no NATS link, so its tools cannot reach the world right now`);
    return { world: this.#world, publish: this.#publish };
  }

  /** Links the agent to other agents (set once NATS is up). */
  setMessenger(messenger: Messenger | undefined): void {
    this.#messenger = messenger;
  }

  /** Rows of a world table, through the supervisor. Works while listening too: it is a read. */
  queryWorld(query: WorldQueryInput): Promise<WorldRow[]> {
    return this.#gate.call(async () => {
      if (!this.#world)
        throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `${this.#gate.id} has no NATS link, so it cannot read the world right now`);
      return this.#world.query(query);
    });
  }

  /** Sends a message to another agent's inbox (it waits there if that agent is stopped). Only while active. */
  tell(to: string, text: string): Promise<AgentMessage> {
    return this.#gate.call(async () => this.#requireMessenger('send messages').tell(to, text));
  }

  /** Asks another agent and waits up to `timeoutMs` for its answer; undefined when none came in time. Only while active. */
  ask(to: string, question: string, timeoutMs: number): Promise<AgentMessage | undefined> {
    return this.#gate.call(async () => this.#requireMessenger('ask other agents').ask(to, question, timeoutMs));
  }

  #requireMessenger(what: string): Messenger {
    if (!this.#gate.isActive())
      throw new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, `${this.#gate.id} is listening (passive) and does not ${what} now`);
    if (!this.#messenger)
      throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `${this.#gate.id} has no NATS link, so it cannot ${what} right now`);
    return this.#messenger;
  }
}
