import type { AliasEntry } from '../../shared/domain/index.js';
import type { ExtractedConcept } from '../../shared/platform/index.js';
import type { AliasRow } from '../memory/memory-store.js';
import { aliasKey, conceptKey, learnAliases } from './learned-aliases.js';

/** One alias of a concept, with where it came from. */
export interface ConceptAlias {
  text: string;
  type: string;
  /** `domain` (alias patterns), `agent` (an agent's name or aliases) or `extracted` (another name a text gave it). */
  source: string;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The other names of an agent's concepts: the domain's aliases and names, and those texts gave
 * them, found in a text by one regular expression over all of them (longest first, on word
 * boundaries). They say which concept a name means, and which concepts a text names.
 */
export class ConceptAliases {
  /** Lower-case alias text → alias. */
  readonly #byText = new Map<string, AliasRow>();
  #pattern: RegExp | undefined;
  /** Names the domain gives its concepts (an agent's persona name) before any memory mentions them. */
  #names = new Map<string, { name: string; type: string }>();

  /** Takes the stored aliases and the domain's; returns the domain's that were not stored as they are now (to be stored). */
  load(stored: readonly AliasRow[], domain: readonly AliasEntry[]): AliasRow[] {
    for (const a of stored) this.#byText.set(a.text.toLowerCase(), a);
    const fresh = domain
      .filter((a) => this.#byText.get(a.alias.toLowerCase())?.concept !== a.target)
      .map((a) => ({ text: a.alias, concept: a.target, type: a.type, source: a.source }));
    for (const a of fresh) this.#byText.set(a.text.toLowerCase(), a);
    this.#names = new Map(domain.map((a) => [a.target, { name: a.name, type: a.type }]));
    this.#rebuild();
    return fresh;
  }

  /** The key of the concept a name or alias means. */
  keyOf(name: string): string {
    return this.#byText.get(name.toLowerCase())?.concept ?? conceptKey(name);
  }

  /** The name and type the domain gives a concept, if it does. */
  domainName(key: string): { name: string; type: string } | undefined {
    return this.#names.get(key);
  }

  /** Every alias of a concept. */
  of(concept: string): ConceptAlias[] {
    return [...this.#byText.values()].filter((a) => a.concept === concept).map(({ text, type, source }) => ({ text, type, source }));
  }

  /** Takes in the aliases texts gave their concepts (`learnAliases`); returns those new to the agent. */
  learn(extracted: ReadonlyArray<readonly ExtractedConcept[] | undefined>, typeOf: (concept: string) => string | undefined): AliasRow[] {
    const learned = learnAliases(extracted, this.#byText, typeOf);
    if (learned.length > 0) this.#rebuild();
    return learned;
  }

  /** Forgets aliases that were learned but not stored. */
  forget(aliases: readonly AliasRow[]): void {
    for (const a of aliases) this.#byText.delete(aliasKey(a.text));
    if (aliases.length > 0) this.#rebuild();
  }

  /** The concepts a text names: the aliases in it, then what the extractor found, each by key with the name and type it goes by. */
  conceptsIn(text: string, extracted: readonly ExtractedConcept[]): Map<string, { name: string; type: string }> {
    const found = new Map<string, { name: string; type: string }>();
    const hits = this.#hits(text);
    // An alias the text itself gave ("Hal, whom they call the grey miller") names the concept by the name beside it.
    const beside = (concept: string) => extracted.find((c) => this.keyOf(c.name) === concept);
    for (const hit of hits)
      found.set(hit.concept, this.#names.get(hit.concept) ?? beside(hit.concept) ?? { name: hit.text, type: hit.type });
    for (const c of extracted) {
      const lower = c.name.toLowerCase();
      // "Rowan" found inside the alias "Elder Rowan" is that concept, already counted.
      if (hits.some((h) => h.text.toLowerCase().includes(lower))) continue;
      const alias = this.#byText.get(lower);
      const key = alias?.concept ?? conceptKey(c.name);
      if (key && !found.has(key)) found.set(key, alias ? (this.#names.get(key) ?? { name: c.name, type: alias.type }) : c);
    }
    return found;
  }

  /**
   * The query with the other names of every concept it names appended: "the old badger" is
   * searched as Elder Rowan too, and "Bram" as the smith. `nameOf` gives a concept's own name.
   */
  expand(query: string, nameOf: (key: string) => string | undefined): string {
    const lower = query.toLowerCase();
    const names = new Set<string>();
    for (const concept of new Set(this.#hits(query).map((h) => h.concept))) {
      const name = nameOf(concept) ?? this.#names.get(concept)?.name;
      const others = this.of(concept).map((a) => a.text);
      for (const n of [name, ...others]) if (n && !n.includes('_') && !lower.includes(n.toLowerCase())) names.add(n);
    }
    return names.size === 0 ? query : `${query} ${[...names].join(' ')}`;
  }

  #hits(text: string): AliasRow[] {
    if (!this.#pattern) return [];
    const hits: AliasRow[] = [];
    for (const m of text.matchAll(this.#pattern)) {
      const alias = this.#byText.get(aliasKey(m[1]!));
      if (alias) hits.push(alias);
    }
    return hits;
  }

  /** One regular expression over every alias, longest first, on word boundaries. */
  #rebuild(): void {
    const texts = [...this.#byText.keys()].sort((a, b) => b.length - a.length);
    this.#pattern = texts.length
      ? new RegExp(`(?<![\\p{L}\\p{N}])(${texts.map((t) => escape(t).replace(/ /g, '\\s+')).join('|')})(?![\\p{L}\\p{N}])`, 'giu')
      : undefined;
  }
}
