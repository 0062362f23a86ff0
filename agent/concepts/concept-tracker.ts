import { type MemorySettings } from '../../shared/config/index.js';
import type { AliasEntry, ConceptType, RelationshipType } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ConceptExtractor, ExtractedConcept, Logger } from '../../shared/platform/index.js';
import type { AgentMemory, ConceptCompanionWrite } from '../memory/agent-memory.js';
import { entry } from '../memory/map-entry.js';
import type { MemoryRecord } from '../memory/memory-record.js';
import type { ConceptRecord, ConceptWrite, MemoryStore } from '../memory/memory-store.js';
import { type ConceptAlias, ConceptAliases } from './concept-aliases.js';
import { checkDescription } from './concept-checks.js';
import { ConceptLinks, MAX_HOPS } from './concept-links.js';
import type { CauseStep, RelatedConcept } from './concept-walks.js';

const BACKFILL_CHUNK = 64;
const EMPTY: ReadonlySet<string> = new Set();

export interface ConceptView extends ConceptRecord {
  aliases: ConceptAlias[];
  /** Ids of the memories that mention it, newest first. */
  memories: string[];
}

/**
 * Keeps an agent's concepts: runs as a memory-created hook, finds the people, places and
 * organisations each new memory mentions (the extractor, plus the domain's aliases), counts
 * mentions and significance, moves concepts up the tiers (mentioned → provisional → tracked),
 * and stores concepts, aliases and `memory → mentions → concept` edges. It also resolves
 * aliases in recall queries: "the old badger" is searched as Elder Rowan too.
 */
export class ConceptTracker {
  readonly #store: MemoryStore;
  readonly #extractor: ConceptExtractor;
  readonly #settings: MemorySettings;
  readonly #logger: Logger | undefined;
  readonly #concepts = new Map<string, ConceptRecord>();
  readonly #aliases = new ConceptAliases();
  readonly #mentions = new Map<string, Set<string>>();
  /** Memory id → keys of the concepts it mentions. */
  readonly #byMemory = new Map<string, Set<string>>();
  #memory!: AgentMemory;
  #links!: ConceptLinks;
  #conceptTypes: Readonly<Record<string, ConceptType>> = {};
  /** New memories whose concepts were written with them: the created hook skips them. */
  readonly #written = new WeakSet<MemoryRecord>();

  private constructor(store: MemoryStore, extractor: ConceptExtractor, settings: MemorySettings, logger: Logger | undefined) {
    this.#store = store;
    this.#extractor = extractor;
    this.#settings = settings;
    this.#logger = logger;
  }

  /** Loads what is stored, records the domain's aliases, and attaches to `memory` (hook and query expansion). */
  static async attach(
    memory: AgentMemory,
    store: MemoryStore,
    options: {
      extractor: ConceptExtractor;
      settings: MemorySettings;
      aliases: readonly AliasEntry[];
      relationshipTypes?: Readonly<Record<string, RelationshipType>>;
      conceptTypes?: Readonly<Record<string, ConceptType>>;
      logger?: Logger;
    },
  ): Promise<ConceptTracker> {
    const tracker = new ConceptTracker(store, options.extractor, options.settings, options.logger);
    tracker.#memory = memory;
    tracker.#links = new ConceptLinks({
      store,
      types: options.relationshipTypes ?? {},
      conceptFor: (name, at) => tracker.#conceptFor(name, at),
      keep: (concept) => tracker.#concepts.set(concept.key, concept),
      keyOf: (name) => tracker.#aliases.keyOf(name),
      nameOf: (key) => tracker.nameOf(key),
      memory: (id) => memory.get(id),
    });
    tracker.#conceptTypes = options.conceptTypes ?? {};
    const stored = await store.conceptGraph();
    tracker.#links.load(stored.relations, stored.causes);
    for (const c of stored.concepts) tracker.#concepts.set(c.key, c);
    for (const m of stored.mentions) tracker.#addMention(m.concept, m.memory);
    await store.saveAliases(tracker.#aliases.load(stored.aliases, options.aliases));
    memory.on('created', (records) => tracker.notice(records));
    memory.setConceptCompanion({ ready: (records, at) => tracker.#ready(records, at) });
    memory.setQueryExpander((q) => tracker.expand(q));
    memory.setCauseWalker((id, hops) => (tracker.#memory.get(id) ? tracker.causes(id, hops) : []));
    await tracker.#backfill();
    return tracker;
  }

  /**
   * Queues concept extraction for the memories that never had it (stored before concepts
   * were turned on, or whose extraction a crash cut short), behind the hooks, in chunks.
   */
  async #backfill(): Promise<void> {
    const ids = await this.#store.withoutConcepts();
    const records = ids.map((id) => this.#memory.get(id)).filter((r): r is MemoryRecord => r !== undefined);
    if (records.length === 0) return;
    this.#logger?.info({ memories: records.length }, 'finding the concepts of older memories');
    for (let i = 0; i < records.length; i += BACKFILL_CHUNK) {
      const chunk = records.slice(i, i + BACKFILL_CHUNK);
      this.#memory.schedule(() => this.notice(chunk));
    }
  }

  /** Finds and counts the concepts of new memories (the created hook), but for those written with their concepts. */
  async notice(all: readonly MemoryRecord[]): Promise<void> {
    const records = all.filter((r) => !this.#written.has(r));
    if (records.length === 0) return;
    // One request for the whole batch (a replay hands over hundreds); the extractor yields as it goes.
    const extracted = await this.#extractor.extract(records.map((r) => r.content));
    const plan = this.#count(records, extracted, Date.now());
    try {
      await this.#store.saveConcepts(plan.concepts, plan.mentions, plan.extracted, plan.at, plan.aliases);
    } catch (err) {
      this.#uncount(plan, records);
      throw err;
    }
  }

  /** The concepts of new memories that the extractor has at hand at once, to be written with them (`AgentMemory.setConceptCompanion`). */
  #ready(records: readonly MemoryRecord[], at: number): ConceptCompanionWrite | undefined {
    const found = records.flatMap((record) => {
      const concepts = this.#extractor.known?.(record.content);
      return concepts ? [{ record, concepts }] : [];
    });
    if (found.length === 0) return undefined;
    const plan = this.#count(
      found.map((f) => f.record),
      found.map((f) => f.concepts),
      at,
    );
    return {
      ...plan,
      written: () => {
        for (const f of found) this.#written.add(f.record);
      },
      failed: () => this.#uncount(plan, records),
    };
  }

  /**
   * Counts the concepts `records` mention in the tracker's view at once (so concurrent counts
   * build on each other) and returns what to store; `#uncount` takes it back if storing fails.
   */
  #count(records: readonly MemoryRecord[], extracted: ReadonlyArray<readonly ExtractedConcept[] | undefined>, at: number): ConceptWrite {
    const aliases = this.#aliases.learn(extracted, (key) => this.#concepts.get(key)?.type);
    const changed = new Map<string, ConceptRecord>();
    const mentions: Array<{ memory: string; concept: string }> = [];
    for (const [i, record] of records.entries()) {
      for (const [key, { name, type }] of this.#aliases.conceptsIn(record.content, extracted[i] ?? [])) {
        if (this.#mentioned(key).has(record.id)) continue;
        this.#addMention(key, record.id);
        const before = this.#concepts.get(key);
        const c: ConceptRecord = before
          ? {
              ...before,
              mentions: before.mentions + 1,
              significance: before.significance + record.importance,
              last_seen: Math.max(before.last_seen, record.created_at),
            }
          : {
              key,
              name,
              type,
              tier: 'mentioned',
              mentions: 1,
              significance: record.importance,
              first_seen: record.created_at,
              last_seen: record.created_at,
            };
        c.tier = this.#tier(c);
        this.#concepts.set(key, c);
        changed.set(key, c);
        mentions.push({ memory: record.id, concept: key });
      }
    }
    const promoted = [...changed.values()].filter((c) => c.tier === 'tracked' && c.mentions === this.#settings.concept_tracked_mentions);
    if (promoted.length > 0) this.#logger?.debug({ concepts: promoted.map((c) => c.key) }, 'concepts now tracked');
    return {
      concepts: [...changed.values()],
      mentions,
      extracted: records.map((r) => r.id),
      at,
      ...(aliases.length > 0 ? { aliases } : {}),
    };
  }

  /**
   * Takes back what `#count` counted for `records` when it was not stored: the mentions go, and
   * each concept loses what they added (the records themselves say their importance: an unstored
   * memory is not in the agent's memory to ask).
   */
  #uncount(plan: ConceptWrite, records: readonly MemoryRecord[]): void {
    this.#aliases.forget(plan.aliases ?? []);
    const importance = new Map(records.map((r) => [r.id, r.importance]));
    for (const m of plan.mentions) {
      this.#mentions.get(m.concept)?.delete(m.memory);
      this.#byMemory.get(m.memory)?.delete(m.concept);
      const c = this.#concepts.get(m.concept);
      if (!c) continue;
      if (c.mentions <= 1) {
        this.#concepts.delete(m.concept);
        continue;
      }
      const uncounted = { ...c, mentions: c.mentions - 1, significance: Math.max(0, c.significance - (importance.get(m.memory) ?? 0)) };
      uncounted.tier = this.#tier(uncounted);
      this.#concepts.set(m.concept, uncounted);
    }
  }

  /**
   * The query with the other names of every concept it names appended: "the old badger" is
   * searched as Elder Rowan too, and "Bram" as the smith.
   */
  expand(query: string): string {
    return this.#aliases.expand(query, (key) => this.#concepts.get(key)?.name);
  }

  /**
   * Relates two concepts (by name, alias or key; a new name becomes a concept) with a type the
   * domain declares. Properties are checked against the type (declared, typed, in range) and
   * missing ones take their defaults; a symmetric type is stored both ways.
   */
  async link(
    fromName: string,
    toName: string,
    type: string,
    properties: Record<string, unknown> = {},
    at = Date.now(),
  ): Promise<{ from: string; to: string; type: string; properties: Record<string, unknown> }> {
    return this.#links.link(fromName, toName, type, properties, at);
  }

  /** Records that one memory happened because of another. */
  linkCause(effect: string, cause: string, reason = '', at = Date.now()): Promise<void> {
    return this.#links.linkCause(effect, cause, reason, at);
  }

  /** Concepts reachable from one within `depth` hops (at most 5), nearest first, optionally along some types only. */
  related(name: string, depth = 1, types?: readonly string[]): RelatedConcept[] {
    return this.#links.related(name, depth, types);
  }

  /** The causes of a memory, walked back up to `depth` (at most 5) links. */
  causes(memoryId: string, depth = MAX_HOPS): CauseStep[] {
    return this.#links.causes(memoryId, depth);
  }

  #conceptFor(name: string, at: number): ConceptRecord {
    const key = this.#aliases.keyOf(name);
    if (!key) throw new ThymosError(ErrorCode.INVALID_INPUT, `expected a concept name with a letter or digit; got ${JSON.stringify(name)}`);
    const known = this.#concepts.get(key);
    if (known) return known;
    const named = this.#aliases.domainName(key);
    return {
      key,
      name: named?.name ?? name,
      type: named?.type ?? 'thing',
      tier: 'mentioned',
      mentions: 0,
      significance: 0,
      first_seen: at,
      last_seen: at,
    };
  }

  /** Concepts at or above a tier, most mentioned first. */
  list(minTier: ConceptRecord['tier'] = 'mentioned', limit = 100): ConceptView[] {
    const order = { mentioned: 0, provisional: 1, tracked: 2 };
    return [...this.#concepts.values()]
      .filter((c) => order[c.tier] >= order[minTier])
      .sort((a, b) => b.mentions - a.mentions || b.significance - a.significance || a.key.localeCompare(b.key))
      .slice(0, limit)
      .map((c) => this.#view(c));
  }

  /** One concept by key, name or alias. */
  get(nameOrAlias: string): ConceptView | undefined {
    const c = this.#concepts.get(this.#aliases.keyOf(nameOrAlias));
    return c ? this.#view(c) : undefined;
  }

  #view(c: ConceptRecord): ConceptView {
    return { ...c, aliases: this.#aliases.of(c.key), memories: [...(this.#mentions.get(c.key) ?? [])].reverse() };
  }

  #tier(c: ConceptRecord): ConceptRecord['tier'] {
    const s = this.#settings;
    if (c.mentions >= s.concept_tracked_mentions || c.significance >= s.concept_tracked_significance) return 'tracked';
    if (c.mentions >= s.concept_provisional_mentions) return 'provisional';
    return 'mentioned';
  }

  /** Keys of the concepts a memory mentions. */
  conceptsOf(memoryId: string): ReadonlySet<string> {
    return this.#byMemory.get(memoryId) ?? EMPTY;
  }

  /** A concept's display name, by key. */
  nameOf(key: string): string {
    return this.#concepts.get(key)?.name ?? this.#aliases.domainName(key)?.name ?? key;
  }

  /**
   * Records what is known of a concept: its type and attributes, checked against the domain's
   * concept types (a declared type when the domain declares any; declared attributes of the
   * right type and allowed values; required ones present once merged with what was known).
   * A new name becomes a concept.
   */
  async describe(
    name: string,
    input: { type?: string | undefined; attributes?: Record<string, unknown> | undefined },
    at = Date.now(),
  ): Promise<ConceptView> {
    const concept = { ...this.#conceptFor(name, at) };
    const type = input.type ?? concept.type;
    const attributes = checkDescription(
      this.#conceptTypes,
      type,
      input.type && input.type !== concept.type ? {} : (concept.attributes ?? {}),
      input.attributes ?? {},
    );
    const described: ConceptRecord = { ...concept, type, attributes, last_seen: Math.max(concept.last_seen, at) };
    await this.#store.saveConcepts([described], []);
    this.#concepts.set(described.key, described);
    return this.#view(described);
  }

  #addMention(key: string, memoryId: string): void {
    this.#mentioned(key).add(memoryId);
    entry(this.#byMemory, memoryId, () => new Set<string>()).add(key);
  }

  #mentioned(key: string): Set<string> {
    return entry(this.#mentions, key, () => new Set<string>());
  }
}
