import type { ExtractedConcept } from '../../shared/platform/index.js';
import type { AliasRow } from '../memory/memory-store.js';

/** The key of a name: lower case, runs of anything but letters and digits as one _. */
export const conceptKey = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '_')
    .replace(/^_+|_+$/g, '');

/** How an alias is looked up: lower case, runs of white space as one space. */
export const aliasKey = (text: string) => text.toLowerCase().replace(/\s+/g, ' ');

/**
 * The other names texts gave their concepts ("Rowan, whom they call the old badger"), new to
 * the agent: each is added to `known` at once (source `extracted`), so the same batch already
 * resolves it, and returned to be stored. An alias the agent has (from the domain, or learned
 * before) keeps its concept; a name is not its own alias.
 */
export function learnAliases(
  extracted: ReadonlyArray<readonly ExtractedConcept[] | undefined>,
  known: Map<string, AliasRow>,
  typeOf: (concept: string) => string | undefined,
): AliasRow[] {
  const learned: AliasRow[] = [];
  for (const c of extracted.flat()) {
    if (!c?.aliases?.length) continue;
    const concept = known.get(c.name.toLowerCase())?.concept ?? conceptKey(c.name);
    if (!concept) continue;
    for (const text of c.aliases) {
      const lower = aliasKey(text);
      if (known.has(lower) || !conceptKey(text) || conceptKey(text) === concept) continue;
      const alias = { text, concept, type: typeOf(concept) ?? c.type, source: 'extracted' };
      known.set(lower, alias);
      learned.push(alias);
    }
  }
  return learned;
}
