
/** A concept found in a text. */
export interface ExtractedConcept {
  name: string;
  type: string;
}

/** Finds the concepts a memory mentions. Replaceable: an application may bring its own. */
export interface ConceptExtractor {
  extract(text: string): ExtractedConcept[] | Promise<ExtractedConcept[]>;
}

/**
 * People, places and organisations by compromise's English tagger: offline, no model. The
 * library loads on first use, so an agent that never stores a memory never pays for it.
 */
export class CompromiseExtractor implements ConceptExtractor {
  #nlp: Promise<typeof import('compromise').default> | undefined;

  async extract(text: string): Promise<ExtractedConcept[]> {
    // Names are capitalised in English: a text without a capital letter has none to find.
    if (!/\p{Lu}/u.test(text)) return [];
    this.#nlp ??= import('compromise').then((m) => m.default);
    const doc = (await this.#nlp)(text);
    const found = new Map<string, ExtractedConcept>();
    const add = (names: string[], type: string) => {
      for (const raw of names) {
        const name = raw.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '').replace(/'s$/i, '').trim();
        if (name.length < 2) continue;
        const key = name.toLowerCase();
        if (!found.has(key)) found.set(key, { name, type });
      }
    };
    add(doc.people().out('array') as string[], 'person');
    add(doc.places().out('array') as string[], 'place');
    add(doc.organizations().out('array') as string[], 'organization');
    return [...found.values()];
  }
}
