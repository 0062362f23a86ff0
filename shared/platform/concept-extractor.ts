/** A concept found in a text. */
export interface ExtractedConcept {
  name: string;
  type: string;
}

/**
 * Finds the concepts texts mention, one list per text in order. Implemented in-process by
 * `CompromiseExtractor` and, for agents, by a client of the fleet's concept service
 * (`<fleet>.concepts` on NATS), which extracts a text once for every agent that hears it.
 */
export interface ConceptExtractor {
  extract(texts: readonly string[]): Promise<ExtractedConcept[][]>;
  /**
   * The concepts of `text` when they are at hand without asking or tagging (they came with a
   * heard event), taken once; undefined otherwise. Lets a memory and its concepts be written together.
   */
  known?(text: string): ExtractedConcept[] | undefined;
}

/** Texts extracted between two turns of the event loop, so a long batch never holds up the process. */
const YIELD_EVERY = 16;

/**
 * People, places and organisations by compromise's English tagger: offline, no model. The
 * library loads on first use, so a process that never extracts never pays for it.
 */
export class CompromiseExtractor implements ConceptExtractor {
  #nlp: Promise<typeof import('compromise').default> | undefined;

  async extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    const out: ExtractedConcept[][] = [];
    for (const [i, text] of texts.entries()) {
      if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setImmediate(resolve));
      out.push(await this.#one(text));
    }
    return out;
  }

  async #one(text: string): Promise<ExtractedConcept[]> {
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
