import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The languages a glossary can be built for (`thymos glossary`), by ISO 639-3 code. */
export const GLOSSARY_LANGUAGES = ['fra', 'spa', 'deu'] as const;
type Language = (typeof GLOSSARY_LANGUAGES)[number];
/** The fewest letters a word and a headword share at their start for one to be read as a form of the other. */
const LEAST_STEM = 4;
/** Words this short are mostly a language's articles, pronouns and prepositions, which a glossary renders worst ("am" as "amplitude modulation"): left out. */
const MOST_SHORT = 3;
/** How many of a headword's English renderings stand for it, the most given first: one reading of a word misses as often as not ("Störung": disturbance, interference). */
const RENDERINGS = 2;
/** A longer run of letters is not looked up, nor split into parts: nearly every headword is shorter ("Donaudampfschifffahrtsgesellschaft" is 34), and a 2,000-letter "word" costs nothing. */
const MOST_LETTERS = 48;
/** The longest phrase looked up as one headword ("mot de passe"). */
const MOST_PHRASE = 3;
/** The most headwords looked through for the one a word is a form of ("sich" starts 3,432 German ones). */
const MOST_FORMS = 256;
/** The longest gloss read, as for an intent in English. */
const MOST_GLOSS = 2_000;
/** Short words kept, for what they say: a negation must not vanish ("pas", "no", "sin"). */
const KEPT_SHORT = new Set(['not', 'no', 'never', 'without']);
/** Each language's commonest words, which tell the languages apart before any glossary is read. */
export const COMMON_WORDS: Record<Language, ReadonlySet<string>> = {
  fra: new Set(
    'le la les des du un une et est pour mon ma mes je tu il elle nous vous ils sont avec dans sur pas qui que ne au aux ce cette'.split(
      ' ',
    ),
  ),
  spa: new Set('el la los las por para con una del al lo mi yo es está como pero muy sí'.split(' ')),
  deu: new Set('der die das und ist ich mein meine nicht ein eine bei auf zu mit für den dem sie wir bitte gibt'.split(' ')),
};
/** A part of a compound read on its own: its head (the last part, in German) at least this long. */
const LEAST_PART = 4;

/** An intent read word by word into English. */
export interface Gloss {
  language: Language;
  /** The English words, ids, numbers and quoted text kept as they were. */
  text: string;
  /** The share of the intent's words the glossary knew. */
  known: number;
}

/**
 * One language's glossary as the file's own text, its lines sorted by headword: a word is found by
 * binary search, so a glossary of 330,000 German headwords costs the text (27 MB for German, whose
 * few letters past Latin-1 make it two bytes a character) and an offset a line, no map of them.
 */
class Lexicon {
  readonly #text: string;
  readonly #starts: Uint32Array;

  constructor(tsv: string) {
    this.#text = tsv;
    const starts: number[] = [];
    for (let at = 0; at < tsv.length;) {
      const end = tsv.indexOf('\n', at);
      const tab = tsv.indexOf('\t', at);
      // A line without a headword and a tab is no entry.
      if (tab > at && (end < 0 || tab < end)) starts.push(at);
      if (end < 0) break;
      at = end + 1;
    }
    this.#starts = Uint32Array.from(starts);
  }

  #head(i: number): string {
    const at = this.#starts[i]!;
    return this.#text.slice(at, this.#text.indexOf('\t', at));
  }

  /** The first line whose headword is not below `word`. */
  #seek(word: string): number {
    let lo = 0;
    let hi = this.#starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#head(mid) < word) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #renderingAt(i: number): string[] {
    const at = this.#text.indexOf('\t', this.#starts[i]!) + 1;
    const end = this.#text.indexOf('\n', at);
    return this.#text.slice(at, end < 0 ? undefined : end).split('|');
  }

  /** The English renderings of a headword as it is, or undefined. */
  exact(word: string): string[] | undefined {
    const i = this.#seek(word);
    return i < this.#starts.length && this.#head(i) === word ? this.#renderingAt(i) : undefined;
  }

  /** The English renderings of a word: its own entry's; else those of the headword it is a form of; else, for a compound, its parts'. */
  english(word: string): string[] | undefined {
    if (word.length > MOST_LETTERS) return undefined;
    const own = this.exact(word) ?? this.#formOf(word);
    if (own !== undefined) return own;
    // A compound (Aufgabenliste): the longest known word it ends with, after what it starts with when that is known too (a linking s let go).
    for (let at = LEAST_PART; word.length - at >= LEAST_PART; at++) {
      const head = this.exact(word.slice(at));
      if (head === undefined) continue;
      const first = word.slice(0, at);
      const modifier = this.exact(first) ?? this.#formOf(first) ?? (first.endsWith('s') ? this.exact(first.slice(0, -1)) : undefined);
      return modifier ? head.map((h) => `${modifier[0]} ${h}`) : head;
    }
    return undefined;
  }

  /** The renderings of the headword a word is a form of: the same start, endings at most two letters apart, the most shared and then the shortest. */
  #formOf(word: string): string[] | undefined {
    if (word.length >= LEAST_STEM + 1) {
      const stem = word.slice(0, Math.max(LEAST_STEM, word.length - 2));
      let best: { i: number; shared: number; length: number } | undefined;
      const from = this.#seek(stem);
      for (let i = from; i < this.#starts.length && i < from + MOST_FORMS; i++) {
        const head = this.#head(i);
        if (!head.startsWith(stem)) break;
        let shared = stem.length;
        while (shared < word.length && shared < head.length && word[shared] === head[shared]) shared++;
        if (head.length - shared > 2 || head.includes(' ')) continue;
        if (!best || shared > best.shared || (shared === best.shared && head.length < best.length))
          best = { i, shared, length: head.length };
      }
      if (best) return this.#renderingAt(best.i);
    }
    return undefined;
  }
}

/** Quoted text (kept as it is), or a token: a word, or an id, number or address when it holds a digit or an @. */
const PIECE = /"[^"]*"|«[^»]*»|„[^“]*“|(?<!\p{L})'[^']{2,}'(?!\p{L})|[\p{L}\p{N}](?:[\p{L}\p{N}._:@/+'’-]*[\p{L}\p{N}])?/gu;

/** An intent's pieces: words (lower-cased, French elisions such as l' and qu' taken off, hyphenated ones apart) and what is kept as it is. */
function piecesOf(intent: string): Array<{ word: string } | { kept: string }> {
  const out: Array<{ word: string } | { kept: string }> = [];
  // Composed, so that ü typed as u and a combining mark is the ü of the glossary.
  for (const piece of intent.normalize('NFC').match(PIECE) ?? []) {
    if (!/^[\p{L}\p{N}]/u.test(piece) || /[\p{N}@]/u.test(piece)) {
      out.push({ kept: piece });
      continue;
    }
    const parts = piece.toLowerCase().split(/['’]/);
    const words = parts.filter((p, i) => i === parts.length - 1 || (p.length > 2 && p !== 'qu')).join('-');
    for (const w of words.split('-')) if (w) out.push({ word: w });
  }
  return out;
}

/**
 * The English words for an intent in French, Spanish or German, read word by word through the
 * glossaries `thymos glossary` builds from the FreeDict dictionaries. A gloss is no
 * translation ("mot de passe" is "word of pass"), but it gives the resolver the words a tool's
 * metadata uses ("Bestellung" is "order", "zurückschicken" is "send back"), which it reads as it
 * reads English. Each language's words are read from disk when an intent first needs them.
 */
export class Glossary {
  readonly #dir: string;
  readonly #lexicons = new Map<Language, Lexicon>();
  readonly #wordsByFrequency: (() => readonly string[]) | undefined;
  #rank: Map<string, number> | undefined;

  private constructor(dir: string, wordsByFrequency: (() => readonly string[]) | undefined) {
    this.#dir = dir;
    this.#wordsByFrequency = wordsByFrequency;
  }

  /**
   * The glossaries in `dir`, or undefined when none was built there. With English words most
   * frequent first (the offline model's), a word is rendered by its commonest renderings
   * ("annuler": cancel, not abolish); without, by the ones its dictionary gives most often.
   */
  static load(dir: string, wordsByFrequency?: () => readonly string[]): Glossary | undefined {
    return GLOSSARY_LANGUAGES.some((l) => existsSync(join(dir, `${l}.tsv`))) ? new Glossary(dir, wordsByFrequency) : undefined;
  }

  /** The renderings that stand for a word: the RENDERINGS commonest in English, a phrase as common as its rarest word. */
  #englishRank(): Map<string, number> | undefined {
    if (this.#wordsByFrequency && !this.#rank) this.#rank = new Map(this.#wordsByFrequency().map((w, i) => [w, i]));
    return this.#rank?.size ? this.#rank : undefined;
  }

  #pick(renderings: readonly string[]): string {
    const rank = this.#englishRank();
    if (!rank) return renderings.slice(0, RENDERINGS).join(' ');
    const rarity = (r: string) => Math.max(...r.split(/[ -]/).map((w) => rank.get(w) ?? rank.size));
    return renderings
      .map((r, i) => ({ r, i, rare: rarity(r) }))
      .sort((a, b) => a.rare - b.rare || a.i - b.i)
      .slice(0, RENDERINGS)
      .map((x) => x.r)
      .join(' ');
  }

  /** A language's glossary, read once; one missing or unreadable (a rebuild under way) is looked for again next time. */
  #lexicon(language: Language): Lexicon | undefined {
    let lexicon = this.#lexicons.get(language);
    if (lexicon === undefined) {
      try {
        lexicon = new Lexicon(readFileSync(join(this.#dir, `${language}.tsv`), 'utf8'));
        this.#lexicons.set(language, lexicon);
      } catch {
        return undefined;
      }
    }
    return lexicon;
  }

  /**
   * Whether a line the common words do not give away is still in one of the glossaries'
   * languages: it uses a common word of one, and that language's glossary knows more of its
   * words than English's 50,000 commonest do ("Quiero devolver mi pedido": only "mi" is English,
   * as the abbreviation). False without the English word list to weigh it against.
   */
  outreadsEnglish(intent: string): boolean {
    const rank = this.#englishRank();
    if (!rank) return false;
    const words = piecesOf(intent).flatMap((p) => ('word' in p ? [p.word] : []));
    if (words.length < 3) return false;
    const english = words.filter((w) => rank.has(w)).length;
    return GLOSSARY_LANGUAGES.some((language) => {
      if (!words.some((w) => COMMON_WORDS[language].has(w))) return false;
      const lexicon = this.#lexicon(language);
      return lexicon !== undefined && words.filter((w) => lexicon.english(w) !== undefined).length > english;
    });
  }

  /**
   * The intent in English words, through the language whose glossary knows most of its words, of
   * those whose common words it uses most; undefined when none knows a third of them, or when
   * nothing but ids and numbers would be left.
   */
  read(intent: string): Gloss | undefined {
    const pieces = piecesOf(intent);
    const words = pieces.flatMap((p) => ('word' in p ? [p.word] : []));
    if (words.length === 0) return undefined;
    const common = GLOSSARY_LANGUAGES.map((l) => words.filter((w) => COMMON_WORDS[l].has(w)).length);
    const most = Math.max(...common);
    let best: { language: Language; lexicon: Memo; known: number } | undefined;
    for (const [i, language] of GLOSSARY_LANGUAGES.entries()) {
      if (common[i]! < most) continue;
      const found = this.#lexicon(language);
      if (!found) continue;
      const lexicon = new Memo(found);
      const known = words.filter((w) => lexicon.english(w) !== undefined).length;
      if (!best || known > best.known) best = { language, lexicon, known };
    }
    if (!best || best.known * 3 < words.length) return undefined;
    const out = glossed(pieces, best.lexicon, (r) => this.#pick(r));
    if (!out.some((w) => /^\p{L}+( \p{L}+)*$/u.test(w))) return undefined;
    return { language: best.language, text: out.join(' ').slice(0, MOST_GLOSS), known: best.known / words.length };
  }
}

/** A lexicon's answers for one intent, each word looked up once. */
class Memo {
  readonly #lexicon: Lexicon;
  readonly #seen = new Map<string, string[] | undefined>();

  constructor(lexicon: Lexicon) {
    this.#lexicon = lexicon;
  }

  exact(words: string): string[] | undefined {
    return this.#lexicon.exact(words);
  }

  english(word: string): string[] | undefined {
    if (!this.#seen.has(word)) this.#seen.set(word, this.#lexicon.english(word));
    return this.#seen.get(word);
  }
}

/**
 * The English of each piece: the longest phrase of up to three words the glossary has, else each
 * word's, else the word itself (a name: DHL). Short words the glossary knows are left out, but
 * for a negation ("pas": not).
 */
function glossed(pieces: ReturnType<typeof piecesOf>, lexicon: Memo, pick: (renderings: readonly string[]) => string): string[] {
  const out: string[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    if ('kept' in piece) {
      out.push(piece.kept);
      continue;
    }
    let phrase: string | undefined;
    for (let n = MOST_PHRASE; n >= 2 && phrase === undefined; n--) {
      const run = pieces.slice(i, i + n);
      if (run.length < n || run.some((p) => !('word' in p))) continue;
      const found = lexicon.exact(run.map((p) => (p as { word: string }).word).join(' '));
      phrase = found && pick(found);
      if (phrase !== undefined) i += n - 1;
    }
    if (phrase !== undefined) {
      out.push(phrase);
      continue;
    }
    const english = lexicon.english(piece.word);
    if (piece.word.length > MOST_SHORT) out.push(english ? pick(english) : piece.word);
    else if (!english) out.push(piece.word);
    else {
      const kept = english.find((e) => KEPT_SHORT.has(e));
      if (kept) out.push(kept);
    }
  }
  return out;
}
