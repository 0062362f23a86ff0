import type { AliasEntry } from '../shared/alias-table.js';
import type { Logger } from '../shared/logger.js';
import type { MemorySettings } from '../shared/thymos-config.js';
import type { AgentMemory } from './agent-memory.js';
import type { ConceptExtractor } from './concept-extractor.js';
import type { MemoryRecord } from './memory-record.js';
import type { ConceptRecord, MemoryStore } from './memory-store.js';

/** One alias of a concept, with where it came from. */
export interface ConceptAlias {
  text: string;
  type: string;
  /** `domain` (alias patterns), `agent` (an agent's name or aliases) or `extracted`. */
  source: string;
}

export interface ConceptView extends ConceptRecord {
  aliases: ConceptAlias[];
  /** Ids of the memories that mention it, newest first. */
  memories: string[];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The key of a name: lower case, runs of anything but letters and digits as one _. */
export const conceptKey = (name: string) => name.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '_').replace(/^_+|_+$/g, '');

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
  /** Lower-case alias text → alias. */
  readonly #aliases = new Map<string, ConceptAlias & { concept: string }>();
  readonly #mentions = new Map<string, Set<string>>();
  #aliasPattern: RegExp | undefined;
  /** Names the domain gives its concepts (an agent's persona name) before any memory mentions them. */
  #names = new Map<string, { name: string; type: string }>();

  private constructor(store: MemoryStore, extractor: ConceptExtractor, settings: MemorySettings, logger: Logger | undefined) {
    this.#store = store;
    this.#extractor = extractor;
    this.#settings = settings;
    this.#logger = logger;
  }

  /** Loads what is stored, records the domain's aliases, and attaches to `memory` (hook and query expansion). */
  static async attach(memory: AgentMemory, store: MemoryStore, options: { extractor: ConceptExtractor; settings: MemorySettings; aliases: readonly AliasEntry[]; logger?: Logger }): Promise<ConceptTracker> {
    const tracker = new ConceptTracker(store, options.extractor, options.settings, options.logger);
    const stored = await store.concepts();
    for (const c of stored.concepts) tracker.#concepts.set(c.key, c);
    for (const a of stored.aliases) tracker.#aliases.set(a.text.toLowerCase(), a);
    for (const m of stored.mentions) tracker.#mentioned(m.concept).add(m.memory);
    const fresh = options.aliases.filter((a) => tracker.#aliases.get(a.alias.toLowerCase())?.concept !== a.target);
    for (const a of fresh) tracker.#aliases.set(a.alias.toLowerCase(), { text: a.alias, concept: a.target, type: a.type, source: a.source });
    await store.saveAliases(fresh.map((a) => ({ text: a.alias, concept: a.target, type: a.type, source: a.source })));
    tracker.#names = new Map(options.aliases.map((a) => [a.target, { name: a.name, type: a.type }]));
    tracker.#rebuildPattern();
    memory.on('created', (records) => tracker.notice(records));
    memory.setQueryExpander((q) => tracker.expand(q));
    return tracker;
  }

  /** Finds and counts the concepts of new memories (the created hook). */
  async notice(records: readonly MemoryRecord[]): Promise<void> {
    const changed = new Map<string, ConceptRecord>();
    const mentions: Array<{ memory: string; concept: string }> = [];
    for (const [i, record] of records.entries()) {
      // A batch (a replay hands over hundreds) yields now and then so the agent keeps answering.
      if (i % 16 === 15) await new Promise((resolve) => setImmediate(resolve));
      const found = new Map<string, { name: string; type: string }>();
      const hits = this.#aliasHits(record.content);
      for (const hit of hits) found.set(hit.concept, this.#names.get(hit.concept) ?? { name: hit.text, type: hit.type });
      for (const c of await this.#extractor.extract(record.content)) {
        const lower = c.name.toLowerCase();
        // "Rowan" found inside the alias "Elder Rowan" is that concept, already counted.
        if (hits.some((h) => h.text.toLowerCase().includes(lower))) continue;
        const alias = this.#aliases.get(lower);
        const key = alias?.concept ?? conceptKey(c.name);
        if (key && !found.has(key)) found.set(key, alias ? (this.#names.get(key) ?? { name: c.name, type: alias.type }) : c);
      }
      for (const [key, { name, type }] of found) {
        if (this.#mentioned(key).has(record.id)) continue;
        this.#mentioned(key).add(record.id);
        const before = this.#concepts.get(key);
        const c: ConceptRecord = before
          ? { ...before, mentions: before.mentions + 1, significance: before.significance + record.importance, last_seen: Math.max(before.last_seen, record.created_at) }
          : { key, name, type, tier: 'mentioned', mentions: 1, significance: record.importance, first_seen: record.created_at, last_seen: record.created_at };
        c.tier = this.#tier(c);
        this.#concepts.set(key, c);
        changed.set(key, c);
        mentions.push({ memory: record.id, concept: key });
      }
    }
    await this.#store.saveConcepts([...changed.values()], mentions);
    const promoted = [...changed.values()].filter((c) => c.tier === 'tracked' && c.mentions === this.#settings.concept_tracked_mentions);
    if (promoted.length > 0) this.#logger?.debug({ concepts: promoted.map((c) => c.key) }, 'concepts now tracked');
  }

  /**
   * The query with the other names of every concept it names appended: "the old badger" is
   * searched as Elder Rowan too, and "Bram" as the smith.
   */
  expand(query: string): string {
    const lower = query.toLowerCase();
    const names = new Set<string>();
    for (const concept of new Set(this.#aliasHits(query).map((h) => h.concept))) {
      const name = this.#concepts.get(concept)?.name ?? this.#names.get(concept)?.name;
      const others = [...this.#aliases.values()].filter((a) => a.concept === concept).map((a) => a.text);
      for (const n of [name, ...others]) if (n && !n.includes('_') && !lower.includes(n.toLowerCase())) names.add(n);
    }
    return names.size === 0 ? query : `${query} ${[...names].join(' ')}`;
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
    const key = this.#aliases.get(nameOrAlias.toLowerCase())?.concept ?? conceptKey(nameOrAlias);
    const c = this.#concepts.get(key);
    return c ? this.#view(c) : undefined;
  }

  #view(c: ConceptRecord): ConceptView {
    const aliases = [...this.#aliases.values()].filter((a) => a.concept === c.key).map(({ text, type, source }) => ({ text, type, source }));
    return { ...c, aliases, memories: [...(this.#mentions.get(c.key) ?? [])].reverse() };
  }

  #tier(c: ConceptRecord): ConceptRecord['tier'] {
    const s = this.#settings;
    if (c.mentions >= s.concept_tracked_mentions || c.significance >= s.concept_tracked_significance) return 'tracked';
    if (c.mentions >= s.concept_provisional_mentions) return 'provisional';
    return 'mentioned';
  }

  #mentioned(key: string): Set<string> {
    let set = this.#mentions.get(key);
    if (!set) {
      set = new Set();
      this.#mentions.set(key, set);
    }
    return set;
  }

  #aliasHits(text: string): Array<ConceptAlias & { concept: string }> {
    if (!this.#aliasPattern) return [];
    const hits: Array<ConceptAlias & { concept: string }> = [];
    for (const m of text.matchAll(this.#aliasPattern)) {
      const alias = this.#aliases.get(m[1]!.toLowerCase().replace(/\s+/g, ' '));
      if (alias) hits.push(alias);
    }
    return hits;
  }

  /** One regular expression over every alias, longest first, on word boundaries. */
  #rebuildPattern(): void {
    const texts = [...this.#aliases.keys()].sort((a, b) => b.length - a.length);
    this.#aliasPattern = texts.length ? new RegExp(`(?<![\\p{L}\\p{N}])(${texts.map((t) => escape(t).replace(/ /g, '\\s+')).join('|')})(?![\\p{L}\\p{N}])`, 'giu') : undefined;
  }
}
