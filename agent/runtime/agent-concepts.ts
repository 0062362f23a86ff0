import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ConceptTracker, ConceptView } from '../concepts/concept-tracker.js';
import type { CauseStep, RelatedConcept } from '../concepts/concept-walks.js';
import type { RuntimeGate } from './runtime-ports.js';

/** The agent's concepts as its tools see them: reads work while listening; writes need it active. */
export class AgentConcepts {
  readonly #gate: RuntimeGate;
  readonly #tracker: ConceptTracker | undefined;

  constructor(gate: RuntimeGate, tracker: ConceptTracker | undefined) {
    this.#gate = gate;
    this.#tracker = tracker;
  }

  /** Concepts at or above a tier, or one concept by name or alias; works while listening. */
  list(query: {
    name?: string | undefined;
    tier?: 'mentioned' | 'provisional' | 'tracked' | undefined;
    limit?: number | undefined;
  }): ConceptView[] {
    const tracker = this.#require();
    if (query.name !== undefined) {
      const one = tracker.get(query.name);
      return one ? [one] : [];
    }
    return tracker.list(query.tier, query.limit);
  }

  /** Relates two concepts, or (type `caused_by`) one memory to the memory that caused it. Only while active. */
  link(request: {
    from: string;
    to: string;
    type: string;
    properties?: Record<string, unknown> | undefined;
    reason?: string | undefined;
  }): Promise<unknown> {
    return this.#gate.call(async () => {
      this.#gate.requireActive();
      const tracker = this.#require();
      if (request.type === 'caused_by') {
        await tracker.linkCause(request.from, request.to, request.reason ?? '');
        return { from: request.from, to: request.to, type: 'caused_by', reason: request.reason ?? '' };
      }
      return tracker.link(request.from, request.to, request.type, request.properties ?? {});
    });
  }

  /** Concepts related to one within `depth` hops. */
  related(name: string, depth: number, types?: readonly string[]): RelatedConcept[] {
    return this.#require().related(name, depth, types);
  }

  /** What led to a memory, along `caused_by` links. */
  causes(memoryId: string, depth: number): CauseStep[] {
    return this.#require().causes(memoryId, depth);
  }

  /** Records a concept's type and attributes, checked against the domain's concept types. Only while active. */
  describe(request: { name: string; type?: string | undefined; attributes?: Record<string, unknown> | undefined }): Promise<ConceptView> {
    return this.#gate.call(async () => {
      this.#gate.requireActive();
      return this.#require().describe(request.name, request);
    });
  }

  #require(): ConceptTracker {
    if (!this.#tracker) throw new ThymosError(ErrorCode.INVALID_INPUT, `${this.#gate.id} keeps no concepts ([memory] concepts = false)`);
    return this.#tracker;
  }
}
