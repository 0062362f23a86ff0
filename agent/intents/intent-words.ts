import { stemmer } from 'stemmer';

import { STOP_WORDS } from '../memory/stop-words.js';

/**
 * Words too common to say which tool is meant. Recall's stop words, but for the question words
 * ("where is my order" asks to look, not to note): what a request asks is in them. And "please"
 * and "kindly", which any request may hold and no action or value is named by: "please cancel
 * ORD-48213" had been nearer an example of another tool that says please than `cancel_order`'s
 * lines. (Not "thanks" or "hello": a tool may thank, an enum may be `hello`.)
 */
const INTENT_STOP_WORDS: ReadonlySet<string> = new Set([
  ...[...STOP_WORDS].filter((w) => !['where', 'what', 'when', 'which', 'who', 'how', 'why'].includes(w)),
  'please',
  'kindly',
]);

/** A run of letters (any script) or digits. */
const WORD = /[\p{L}\p{M}][\p{L}\p{M}\p{N}]*|\p{N}+/gu;
/** The longest intent read, in characters: a longer one is answered `too_long`, and a longer context is read this far. */
export const INTENT_MAX_CHARS = 2_000;

/**
 * The words of a text as intent resolution compares them: lower-cased, snake_case and kebab-case
 * split, stop words and digits left out, each stemmed (Porter), so "refunds", "refunded" and
 * "refunding" are one word.
 */
export function intentWords(text: string): string[] {
  const out: string[] = [];
  for (const token of text.toLowerCase().match(WORD) ?? []) {
    const stem = stemOf(token);
    if (stem !== undefined) out.push(stem);
  }
  return out;
}

/** One word's stem as `intentWords` makes it; undefined for a stop word, a number, or what is not one word ("so-called"). */
export function intentStem(word: string): string | undefined {
  const tokens = word.toLowerCase().match(WORD);
  return tokens?.length === 1 ? stemOf(tokens[0]!) : undefined;
}

/** A lower-cased token's stem, its shorthand spelled out; undefined for a stop word or a number. */
function stemOf(token: string): string | undefined {
  const raw = SHORTHAND.get(token) ?? token;
  return INTENT_STOP_WORDS.has(raw) || /\p{N}/u.test(raw) ? undefined : stemmer(raw);
}

/** Optimal string alignment distance (Levenshtein with adjacent swaps), giving up above `max`. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > max) return max + 1;
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/** Shorthand people write in chat and tickets, read as the word it stands for. A Map, not an object: a word such as "constructor" is only a word. */
const SHORTHAND: ReadonlyMap<string, string> = new Map(
  Object.entries({
    pls: 'please',
    plz: 'please',
    thx: 'thanks',
    ty: 'thanks',
    tmrw: 'tomorrow',
    tmr: 'tomorrow',
    tmw: 'tomorrow',
    tmrrw: 'tomorrow',
    tonite: 'tonight',
    mtg: 'meeting',
    appt: 'appointment',
    msg: 'message',
    pw: 'password',
    pwd: 'password',
    acct: 'account',
    addr: 'address',
    db: 'database',
    prod: 'production',
    env: 'environment',
    cfg: 'configuration',
    config: 'configuration',
    info: 'information',
    qty: 'quantity',
    amt: 'amount',
    hr: 'hour',
    hrs: 'hours',
    min: 'minute',
    mins: 'minutes',
    wk: 'week',
    yr: 'year',
    asap: 'urgently',
    u: 'you',
    ur: 'your',
    b4: 'before',
  }),
);

/** The words of a text as they are written, lower-cased, shorthand spelled out, stop words left out (not stemmed). */
export function rawWords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{M}][\p{L}\p{M}\p{N}]*/gu) ?? [])
    .map((w) => SHORTHAND.get(w) ?? w)
    .filter((w) => !INTENT_STOP_WORDS.has(w) && !/\p{N}/u.test(w));
}

/** The stem of the first word of a tool's name, what it does: `cancel` of `cancel_order`; undefined when that is a stop word. */
function actionOf(toolName: string): string | undefined {
  return stemOf(toolName.toLowerCase().split(/[_\-.\s]+/)[0] ?? '');
}

/** Words that say not to: "never", "no", "don't" written without its apostrophe; any word ending in n't is one too. */
const NEGATIONS: ReadonlySet<string> = new Set([
  'not',
  'never',
  'no',
  'cannot',
  'without',
  'nor',
  'neither',
  'dont',
  'doesnt',
  'didnt',
  'wont',
  'cant',
  'shouldnt',
  'mustnt',
]);
/** How many words after a negation it reaches: "don't want to cancel", "do not ever refund". */
const NEGATION_REACH = 3;

/**
 * Whether the words say not to do what a tool's name says it does: a negation reaching its first
 * word, the action ("don't cancel my order", "I do not want it refunded" for `cancel_order` and
 * `refund_order`). "I don't want the order any more" does not: it names no action to refuse.
 */
export function negatesAction(text: string, toolName: string): boolean {
  const action = actionOf(toolName);
  if (action === undefined) return false;
  const negation = (t: string) => NEGATIONS.has(t) || /n['’]t$/.test(t);
  const names = (t: string) => stemOf(t.replace(/['’].*$/, '')) === action;
  // Within a clause: "I don't want it, cancel it" asks to cancel.
  return text
    .toLowerCase()
    .split(/[,.;:!?()]/)
    .some((clause) => {
      const tokens = clause.match(/[\p{L}\p{M}][\p{L}\p{M}'’]*/gu) ?? [];
      return tokens.some((t, i) => negation(t) && tokens.slice(i + 1, i + 1 + NEGATION_REACH).some(names));
    });
}

/** Words a question about what happened begins with. */
const ASKING = new Set(['who', 'why', 'when', 'was', 'were', 'has', 'have', 'had', 'did', 'is', 'are']);

/**
 * Whether the words ask about the action of a tool's name as done, not to do it: a sentence that
 * begins "who", "why", "when", "was", "has"… and names the action in its past form ("why was
 * ORD-12345 cancelled?", "who refunded it"). "Can I cancel ORD-12345?" and "can you get it
 * refunded?" still ask for it.
 */
export function asksWhetherDone(text: string, toolName: string): boolean {
  const action = actionOf(toolName);
  if (action === undefined) return false;
  return (text.toLowerCase().match(/[^.!;]+[.!;?]?/g) ?? []).some((sentence) => {
    const tokens = sentence.match(/[\p{L}\p{M}][\p{L}\p{M}'’]*/gu) ?? [];
    return ASKING.has(tokens[0] ?? '') && tokens.some((t) => t.endsWith('ed') && stemOf(t) === action);
  });
}
