import { stemmer } from 'stemmer';

import { STOP_WORDS } from '../memory/stop-words.js';

/**
 * Claims for the contradiction check: a memory's content words (stemmed, stop words out) and
 * whether it is negated, with antonyms folded into a word and a negation.
 */

/** Word sets this similar (Jaccard) or more state the same thing, up to negation. */
export const JACCARD_MIN = 0.6;

/** The tag of a memory of what the agent itself said in a conversation. */
export const SAID_TAG = 'said';
/** The tag of a heard line that only asks. */
export const QUESTION_TAG = 'question';

/**
 * Whether a memory states something the agent holds: not its own replies ("I know nothing of
 * the reed bank" is no belief that the reed bank is wrong) and not the questions it heard.
 */
export function holdsClaim(tags: readonly string[]): boolean {
  return !tags.includes(SAID_TAG) && !tags.includes(QUESTION_TAG);
}

const NEGATIONS = new Set(['not', 'no', 'never', 'nobody', 'nothing', 'none', 'neither', 'nor', 'without', 'nowhere']);
/** Words and their opposites: a statement with one contradicts the same statement with the other. */
const OPPOSITES: ReadonlyArray<readonly [string, string]> = [
  ['safe', 'dangerous'],
  ['alive', 'dead'],
  ['open', 'closed'],
  ['friend', 'enemy'],
  ['honest', 'dishonest'],
  ['true', 'false'],
  ['present', 'absent'],
  ['full', 'empty'],
  ['trust', 'distrust'],
  ['loyal', 'disloyal'],
  ['guilty', 'innocent'],
  ['allowed', 'forbidden'],
  ['healthy', 'sick'],
  ['found', 'lost'],
  ['win', 'lose'],
  ['like', 'dislike'],
  ['love', 'hate'],
];
/** Stem of a word → [stem of its canonical side, whether it is the opposite side]. */
const OPPOSITE_OF = new Map<string, [string, boolean]>(
  OPPOSITES.flatMap(([yes, no]) => [
    [stemmer(yes), [stemmer(yes), false]],
    [stemmer(no), [stemmer(yes), true]],
  ]),
);

/** The content words of a statement (stemmed, opposites folded to one side) and whether it is negated overall. */
export function parseClaim(text: string): { words: Set<string>; negated: boolean } {
  const tokens =
    text
      .toLowerCase()
      .replace(/n['’]t\b/g, ' not')
      .replace(/\bcannot\b/g, 'can not')
      .match(/\p{L}+/gu) ?? [];
  const words = new Set<string>();
  let negated = false;
  for (const t of tokens) {
    if (NEGATIONS.has(t)) {
      negated = !negated;
      continue;
    }
    if (STOP_WORDS.has(t)) continue;
    const stem = stemmer(t);
    const opposite = OPPOSITE_OF.get(stem);
    if (opposite) {
      words.add(opposite[0]);
      if (opposite[1]) negated = !negated;
    } else {
      words.add(stem);
    }
  }
  return { words, negated };
}

/** Mostly the same words: at least two shared and a Jaccard index of at least JACCARD_MIN. */
export function overlaps(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return shared >= 2 && shared / (a.size + b.size - shared) >= JACCARD_MIN;
}
