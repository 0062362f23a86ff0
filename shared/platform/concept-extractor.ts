import { CONCEPT_ALIASES_MAX } from '../protocol/concept-protocol.js';

/** A concept found in a text. */
export interface ExtractedConcept {
  name: string;
  type: string;
  /** Other names the text gives it: "the old badger" in "Rowan, whom they call the old badger". */
  aliases?: string[];
}

/**
 * Most characters of one text that are tagged and scanned for alias phrases: its first 20,000 (a
 * few pages). Tagging and the phrases grow with a text's length, and a text can be an event
 * anyone published: past this, a long text costs no more than a long page.
 */
export const EXTRACT_CHARS_MAX = 20_000;

// Every repetition in the alias phrases is bounded: from any starting letter a match can only look
// so far ahead, so a long run of letters or spaces costs time in proportion to its length, not
// to its square.
/** A word of a name or an other name: a letter and at most 63 more. */
const WORD = String.raw`[\p{L}'-]{1,64}`;
const SPACE = String.raw`\s{1,16}`;
/** An alias phrase's other name: up to four words ("the old badger"), or a quoted one, ending the clause. */
const OTHER_NAME = String.raw`["“']?((?:the${SPACE}|a${SPACE})?${WORD}(?:${SPACE}${WORD}){0,3}?)["”']?(?=\s{0,16}(?:[,.;:!?)]|$))`;
/** A name, from the start of a word: up to four capitalised words ("Elder Rowan"). */
const NAME = String.raw`(?<![\p{L}'-])(\p{Lu}[\p{L}'-]{0,63}(?:${SPACE}\p{Lu}[\p{L}'-]{0,63}){0,3})`;
/**
 * How English gives someone another name: "Rowan, whom they call the old badger," "Hal, known
 * as the miller," "Mira, called Silverleaf by the children". The name must be one the tagger
 * found; the other name ends where the clause does.
 */
const ALIAS_PHRASES = [
  new RegExp(
    String.raw`${NAME},?${SPACE}(?:whom|who|that)${SPACE}(?:${WORD}${SPACE}){0,3}?(?:call|calls|called|name|names|named)${SPACE}${OTHER_NAME}`,
    'gu',
  ),
  new RegExp(
    String.raw`${NAME},?${SPACE}(?:(?:also|better|otherwise)${SPACE})?(?:known${SPACE}as|called|nicknamed)${SPACE}${OTHER_NAME}`,
    'gu',
  ),
];
/** Words an other name cannot be, alone: "called him", "known as it". */
const NOT_A_NAME = new Set(['him', 'her', 'it', 'them', 'me', 'you', 'us', 'that', 'this', 'so', 'one']);

/**
 * The other names `text` gives the concepts in `found` (keyed by lower-case name), added to them;
 * only its first EXTRACT_CHARS_MAX characters are read.
 */
export function addAliasPhrases(text: string, found: ReadonlyMap<string, ExtractedConcept>): void {
  const read = text.slice(0, EXTRACT_CHARS_MAX);
  for (const phrase of ALIAS_PHRASES) {
    for (const m of read.matchAll(phrase)) {
      const name = m[1]!.trim().toLowerCase();
      const alias = m[2]!.trim().replace(/\s+/g, ' ');
      const concept =
        found.get(name) ??
        [...found.values()].find((c) => c.name.toLowerCase().endsWith(` ${name}`) || name.endsWith(` ${c.name.toLowerCase()}`));
      if (!concept || alias.length < 2 || NOT_A_NAME.has(alias.toLowerCase()) || alias.toLowerCase() === concept.name.toLowerCase())
        continue;
      if (!(concept.aliases ?? []).some((a) => a.toLowerCase() === alias.toLowerCase()))
        concept.aliases = [...(concept.aliases ?? []), alias].slice(0, CONCEPT_ALIASES_MAX);
    }
  }
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

/** Texts, or characters, extracted between two turns of the event loop, so a long batch never holds up the process. */
const YIELD_EVERY = 16;
const YIELD_EVERY_CHARS = EXTRACT_CHARS_MAX;

/**
 * People, places and organisations by compromise's English tagger, and the other names a text
 * gives them by its alias phrases: offline, no model. The library loads on first use, so a
 * process that never extracts never pays for it. Only a text's first EXTRACT_CHARS_MAX
 * characters are read.
 */
export class CompromiseExtractor implements ConceptExtractor {
  #nlp: Promise<typeof import('compromise').default> | undefined;

  async extract(texts: readonly string[]): Promise<ExtractedConcept[][]> {
    const out: ExtractedConcept[][] = [];
    let count = 0;
    let chars = 0;
    for (const whole of texts) {
      const text = whole.slice(0, EXTRACT_CHARS_MAX);
      if (count >= YIELD_EVERY || chars >= YIELD_EVERY_CHARS) {
        await new Promise((resolve) => setImmediate(resolve));
        count = chars = 0;
      }
      count += 1;
      chars += text.length;
      out.push(await this.#one(text));
    }
    return out;
  }

  /** The concepts of one text, already cut to EXTRACT_CHARS_MAX. */
  async #one(text: string): Promise<ExtractedConcept[]> {
    // Names are capitalised in English: a text without a capital letter has none to find.
    if (!/\p{Lu}/u.test(text)) return [];
    this.#nlp ??= import('compromise').then((m) => m.default);
    const doc = (await this.#nlp)(text);
    const found = new Map<string, ExtractedConcept>();
    const add = (names: string[], type: string) => {
      for (const raw of names) {
        const name = raw
          .replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')
          .replace(/'s$/i, '')
          .trim();
        if (name.length < 2) continue;
        const key = name.toLowerCase();
        if (!found.has(key)) found.set(key, { name, type });
      }
    };
    add(doc.people().out('array') as string[], 'person');
    add(doc.places().out('array') as string[], 'place');
    add(doc.organizations().out('array') as string[], 'organization');
    addAliasPhrases(text, found);
    return [...found.values()];
  }
}
