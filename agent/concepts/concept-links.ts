import type { RelationshipType } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { entry } from '../memory/map-entry.js';
import type { MemoryRecord } from '../memory/memory-record.js';
import type { ConceptRecord, MemoryStore } from '../memory/memory-store.js';
import { checkRelationship } from './concept-checks.js';
import { type CauseStep, type RelatedConcept, walkCauses, walkRelated } from './concept-walks.js';

export const MAX_HOPS = 5;

/** What the links read and change of the concepts and memories they join. */
export interface ConceptLinksHost {
  store: Pick<MemoryStore, 'saveLinks'>;
  /** The relationship types the domain declares. */
  types: Readonly<Record<string, RelationshipType>>;
  /** The concept a name, alias or key means: the one known, or a new one (not kept until linked). */
  conceptFor(name: string, at: number): ConceptRecord;
  /** Keeps a concept a stored link holds. */
  keep(concept: ConceptRecord): void;
  keyOf(name: string): string;
  nameOf(key: string): string;
  memory(id: string): MemoryRecord | undefined;
}

/**
 * The graph an agent keeps beside its concepts: typed edges between concepts (`relates`) and
 * causes between memories (`caused_by`), stored as they are made and walked up to 5 hops.
 */
export class ConceptLinks {
  readonly #host: ConceptLinksHost;
  readonly #edges = new Map<string, Array<{ type: string; to: string; properties: Record<string, unknown> }>>();
  readonly #causes = new Map<string, Array<{ cause: string; reason: string }>>();

  constructor(host: ConceptLinksHost) {
    this.#host = host;
  }

  /** Takes in the links the store holds. */
  load(
    relations: ReadonlyArray<{ from: string; to: string; type: string; properties: Record<string, unknown> }>,
    causes: ReadonlyArray<{ effect: string; cause: string; reason: string }>,
  ): void {
    for (const r of relations) this.#edgesOf(r.from).push({ type: r.type, to: r.to, properties: r.properties });
    for (const c of causes) this.#causesOf(c.effect).push({ cause: c.cause, reason: c.reason });
  }

  /**
   * Relates two concepts (by name, alias or key; a new name becomes a concept) with a type the
   * domain declares, its properties checked against the type; a symmetric type is stored both ways.
   */
  async link(
    fromName: string,
    toName: string,
    type: string,
    properties: Record<string, unknown>,
    at: number,
  ): Promise<{ from: string; to: string; type: string; properties: Record<string, unknown> }> {
    const { spec, properties: props } = checkRelationship(this.#host.types, type, properties);
    const from = this.#host.conceptFor(fromName, at);
    const to = this.#host.conceptFor(toName, at);
    if (from.key === to.key)
      throw new ThymosError(ErrorCode.INVALID_INPUT, `to: a concept is not related to itself (${from.key})`, { location: { path: 'to' } });
    const relations = [{ from, to, type, properties: props, at }];
    if (spec.symmetric) relations.push({ from: to, to: from, type, properties: props, at });
    await this.#host.store.saveLinks(relations, []);
    for (const r of relations) {
      this.#host.keep(r.from);
      this.#edgesOf(r.from.key).push({ type, to: r.to.key, properties: props });
    }
    return { from: from.key, to: to.key, type, properties: props };
  }

  /** Records that one memory happened because of another. */
  async linkCause(effect: string, cause: string, reason: string, at: number): Promise<void> {
    for (const [path, id] of [
      ['from', effect],
      ['to', cause],
    ] as const) {
      if (!this.#host.memory(id))
        throw new ThymosError(ErrorCode.NOT_FOUND, `${path}: no memory ${JSON.stringify(id)}`, { location: { path } });
    }
    if (effect === cause)
      throw new ThymosError(ErrorCode.INVALID_INPUT, 'to: a memory does not cause itself', { location: { path: 'to' } });
    await this.#host.store.saveLinks([], [{ effect, cause, reason, at }]);
    this.#causesOf(effect).push({ cause, reason });
  }

  /** Concepts reachable from one within `depth` hops (at most 5), nearest first, optionally along some types only. */
  related(name: string, depth: number, types?: readonly string[]): RelatedConcept[] {
    return walkRelated(
      this.#host.keyOf(name),
      Math.min(Math.max(1, depth), MAX_HOPS),
      (key) => this.#edges.get(key) ?? [],
      (key) => this.#host.nameOf(key),
      types,
    );
  }

  /** The causes of a memory, walked back up to `depth` (at most 5) links. */
  causes(memoryId: string, depth: number): CauseStep[] {
    if (!this.#host.memory(memoryId))
      throw new ThymosError(ErrorCode.NOT_FOUND, `memory: no memory ${JSON.stringify(memoryId)}`, { location: { path: 'memory' } });
    return walkCauses(
      memoryId,
      Math.min(depth, MAX_HOPS),
      (id) => this.#causes.get(id) ?? [],
      (id) => this.#host.memory(id)?.content ?? '',
    );
  }

  #edgesOf(key: string): Array<{ type: string; to: string; properties: Record<string, unknown> }> {
    return entry(this.#edges, key, () => []);
  }

  #causesOf(id: string): Array<{ cause: string; reason: string }> {
    return entry(this.#causes, id, () => []);
  }
}
