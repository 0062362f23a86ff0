/**
 * Builds the glossaries the offline intent resolver reads an intent in French, Spanish or German
 * through: for each word of the language, the English words a bilingual dictionary gives it.
 *
 * Source: the FreeDict dictionaries in dictd's format (`freedict-fra-eng`, `freedict-spa-eng`,
 * `freedict-deu-eng`, and `freedict-eng-fra` and the like read backwards: Debian's packages
 * `dict-freedict-fra-eng` and the like install them in /usr/share/dictd; freedict.org has them
 * for other systems). They are GPL-licensed, so they
 * are read on the machine that builds, never shipped in the package: without them, an intent in
 * another language is answered `unsupported_language`.
 *
 * Out: `<out>/<lang>.tsv`, one line a headword (a word, or a phrase of up to three), sorted as
 * JavaScript compares strings: the headword lower-cased, a tab, then its English renderings joined
 * by `|`, the ones the dictionary gives most often first, then the shortest (a headword may have
 * several entries: "Bestellung" is "commission" once and "order" twice). Written aside, then
 * renamed into place.
 *
 * `thymos glossary` (cli/glossary-command.ts) runs it; `npm run build:glossary` in a checkout.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { GLOSSARY_LANGUAGES } from './glossary.js';

/** Most English renderings kept for one headword. */
const MOST_RENDERINGS = 8;
/** A rendering longer than this many words is an explanation, not a word for the word. */
const MOST_WORDS = 3;
const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** dictd's index numbers: base 64, most significant digit first. */
function indexNumber(digits: string, where: string): number {
  if (digits === '') throw new ThymosError(ErrorCode.INVALID_INPUT, `${where}: expected a base-64 offset or length, got nothing`);
  let n = 0;
  for (const d of digits) {
    const v = BASE64.indexOf(d);
    if (v < 0)
      throw new ThymosError(ErrorCode.INVALID_INPUT, `${where}: expected a base-64 offset or length, got ${JSON.stringify(digits)}`);
    n = n * 64 + v;
  }
  return n;
}

/** What one dictd entry renders its headword as: its lines after the headword's, up to its notes; `foreign` for renderings in another language than English. */
export function renderingsOf(entry: string, foreign = false): string[] {
  const found: string[] = [];
  const phraseOf = foreign ? /^\p{L}[\p{L}' -]*$/u : /^[a-z][a-z' -]*$/;
  for (const raw of entry.split('\n').slice(1)) {
    const line = raw.trim();
    if (line === '') break;
    if (/^("|synonyms?:|see:|note:|antonyms?:)/i.test(line)) continue;
    const plain = line.replace(/^\d+\.\s*/, '').replace(/<[^>]*>|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}/g, ' ');
    for (const part of plain.split(/[,;]/)) {
      const phrase = part
        .trim()
        .toLowerCase()
        .replace(/^to\s+/, '')
        .replace(/\s+/g, ' ');
      if (phrase && phraseOf.test(phrase) && phrase.split(' ').length <= MOST_WORDS) found.push(phrase);
    }
  }
  return found;
}

/** Words and phrases of up to three words, not dictd's own entries (00databaseinfo and the like). */
const HEADWORD = /^\p{L}[\p{L}'-]*(?: \p{L}[\p{L}'-]*){0,2}$/u;

/** A dictionary's entries (`<base>.index` and `<base>.dict.dz`), headwords lower-cased, or undefined when it is not there. */
function entriesOf(base: string): Array<{ head: string; entry: string }> | undefined {
  if (!existsSync(`${base}.index`)) return undefined;
  if (!existsSync(`${base}.dict.dz`))
    throw new ThymosError(
      ErrorCode.INVALID_INPUT,
      `${base}.index has no ${base}.dict.dz beside it: a dictionary in dictd's format is both`,
    );
  let body: Buffer;
  try {
    body = gunzipSync(readFileSync(`${base}.dict.dz`));
  } catch (err) {
    throw new ThymosError(ErrorCode.INVALID_INPUT, `${base}.dict.dz: expected a dictzip (gzip) file: ${(err as Error).message}`);
  }
  const entries: Array<{ head: string; entry: string }> = [];
  readFileSync(`${base}.index`, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line === '') return;
      const [head, offset, length] = line.split('\t');
      const where = `${base}.index line ${i + 1}`;
      if (head === undefined || offset === undefined || length === undefined)
        throw new ThymosError(ErrorCode.INVALID_INPUT, `${where}: expected headword, offset and length separated by tabs`);
      const word = head.toLowerCase();
      if (!HEADWORD.test(word) || word.startsWith('00')) return;
      const start = indexNumber(offset, where);
      entries.push({ head: word, entry: body.subarray(start, start + indexNumber(length, where)).toString('utf8') });
    });
  return entries;
}

/**
 * One language's glossary lines, from `<dir>/freedict-<lang>-eng` (a word to its English) and,
 * where it is there too, `<dir>/freedict-eng-<lang>` read backwards (an English word to the
 * words that render it: "cancel" gives "anular" its English); undefined when neither is there.
 */
export function glossaryLines(dir: string, lang: string): string[] | undefined {
  const forward = entriesOf(join(dir, `freedict-${lang}-eng`));
  const backward = entriesOf(join(dir, `freedict-eng-${lang}`));
  if (!forward && !backward) return undefined;
  const counts = new Map<string, Map<string, number>>();
  const count = (word: string, english: string) => {
    const seen = counts.get(word) ?? counts.set(word, new Map()).get(word)!;
    seen.set(english, (seen.get(english) ?? 0) + 1);
  };
  for (const { head, entry } of forward ?? []) for (const english of renderingsOf(entry)) count(head, english);
  for (const { head, entry } of backward ?? []) {
    if (!/^[a-z][a-z' -]*$/.test(head)) continue;
    for (const word of renderingsOf(entry, true)) if (HEADWORD.test(word)) count(word, head);
  }
  const lines: string[] = [];
  for (const [word, seen] of [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    // Most often given first, then the one of fewest words; the sort is stable, so among equals the dictionary's own order stands.
    const best = [...seen]
      .sort((a, b) => b[1] - a[1] || a[0].split(' ').length - b[0].split(' ').length)
      .slice(0, MOST_RENDERINGS)
      .map(([p]) => p);
    lines.push(`${word}\t${best.join('|')}`);
  }
  return lines;
}

/**
 * Builds every glossary whose dictionary is in `from` into `out`, replacing what was there only
 * once all are read. Returns how many headwords each has; NOT_FOUND, with nothing changed, when
 * `from` holds none of the dictionaries.
 */
export function buildGlossaries(from: string, out: string): Record<string, number> {
  if (existsSync(from) && !statSync(from).isDirectory())
    throw new ThymosError(ErrorCode.INVALID_INPUT, `${resolve(from)} is a file: expected the folder that holds the dictionaries`);
  const read = GLOSSARY_LANGUAGES.flatMap((lang) => {
    const lines = glossaryLines(from, lang);
    return lines ? [{ lang, lines }] : [];
  });
  if (read.length === 0) {
    const files = GLOSSARY_LANGUAGES.map((l) => `freedict-${l}-eng`).join(', ');
    throw new ThymosError(
      ErrorCode.NOT_FOUND,
      `no FreeDict dictionary in ${resolve(from)}: expected ${files} (or freedict-eng-fra and the like), each an .index and a .dict.dz (Debian: apt-get install dict-freedict-fra-eng dict-freedict-spa-eng dict-freedict-deu-eng)`,
    );
  }
  const built = Object.fromEntries(read.map(({ lang, lines }) => [lang, lines.length]));
  const target = resolve(out);
  // Written aside under a name of this build's own, then swapped in: a build that fails, or two at once, never leaves a glossary half-written.
  const staging = `${target}.building-${process.pid}`;
  const old = `${target}.old-${process.pid}`;
  try {
    mkdirSync(staging, { recursive: true });
    for (const { lang, lines } of read) writeFileSync(join(staging, `${lang}.tsv`), `${lines.join('\n')}\n`);
    writeFileSync(
      join(staging, 'README.md'),
      `Built by thymos glossary from the FreeDict dictionaries in ${resolve(from)} (GPL): ${JSON.stringify(built)}. Not shipped in the package.\n`,
    );
    if (existsSync(target)) renameSync(target, old);
    renameSync(staging, target);
  } catch (err) {
    throw new ThymosError(
      ErrorCode.WRITE_FAILED,
      `cannot write the glossaries into ${target}: ${(err as Error).message} (run thymos glossary as the user who installed Thymos)`,
    );
  } finally {
    // What is left aside is cleared; a folder that cannot be cleared (where none could be made) is no second error.
    for (const aside of [staging, old]) {
      try {
        rmSync(aside, { recursive: true, force: true });
      } catch {
        // nothing of this build's is there
      }
    }
  }
  return built;
}
