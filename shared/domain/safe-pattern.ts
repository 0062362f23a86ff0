import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';

import { ErrorCode, ThymosError } from '../errors/errors.js';

/**
 * A user-supplied regular expression (a tool field's `pattern`), compiled for RE2's engine:
 * matching takes time linear in the text, whatever the pattern, so no argument can hold the
 * agent's only thread. JavaScript's own engine backtracks: `(a+)+b` against 34 `a` and a `!`
 * takes minutes there.
 */
export interface SafePattern {
  /** The pattern as written. */
  readonly source: string;
  /** Whether the whole of `text` matches (the pattern is anchored at both ends); may be passed on its own. */
  readonly matches: (text: string) => boolean;
}

/** How many compiled patterns are kept; a domain declares a few dozen. */
const CACHED_MAX = 1024;

// A compiled pattern is a pure function of its source, so sharing one across callers changes
// nothing they can see; the bound keeps a stream of distinct patterns from growing memory.
const compiled = new LRUCache<string, SafePattern>({ max: CACHED_MAX });

/**
 * What is wrong with a pattern, or undefined when it is one Thymos can match: valid for
 * JavaScript with the `u` flag (it is advertised to MCP clients as JSON Schema's `pattern`)
 * and in RE2's syntax, which has no backreferences and no lookaround.
 *
 * @example patternProblem('(a)\\1') // 'expected a regular expression in RE2 syntax …; got a backreference `\\1`, which needs backtracking'
 */
export function patternProblem(source: string): string | undefined {
  try {
    new RegExp(source, 'u');
  } catch (err) {
    return `not a JavaScript regular expression: ${(err as Error).message}`;
  }
  try {
    RE2JS.compile(source);
    return undefined;
  } catch (err) {
    const feature = unsupportedFeature(source);
    const why = feature ? `got ${feature}, which needs backtracking` : `got ${JSON.stringify(source)}: ${(err as Error).message}`;
    return `expected a regular expression in RE2 syntax (no backreferences, no lookahead or lookbehind), so that matching takes time linear in the value; ${why}`;
  }
}

/**
 * Compiles a pattern for whole-value matching, or throws SCHEMA_INVALID saying what is
 * wrong with it (`patternProblem`). Compiled patterns are cached by source.
 *
 * @example compilePattern('ORD-[0-9]{5}').matches('ORD-48213') // true
 */
export function compilePattern(source: string): SafePattern {
  const hit = compiled.get(source);
  if (hit) return hit;
  const problem = patternProblem(source);
  if (problem) throw new ThymosError(ErrorCode.SCHEMA_INVALID, `pattern ${JSON.stringify(source)}: ${problem}`);
  const re = RE2JS.compile(source);
  const pattern: SafePattern = Object.freeze({ source, matches: (text: string) => re.testExact(text) });
  compiled.set(source, pattern);
  return pattern;
}

/** The backtracking construct a pattern uses, named for people, when RE2 refused it for one. */
function unsupportedFeature(source: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      const next = source[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `a backreference \`\\${next}\``;
      if (!inClass && next === 'k' && source[i + 2] === '<') return 'a named backreference `\\k<…>`';
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(') {
      const look = /^\(\?(<?[=!])/.exec(source.slice(i, i + 4));
      if (look) return `${look[1]!.startsWith('<') ? 'a lookbehind' : 'a lookahead'} \`(?${look[1]}\``;
    }
  }
  return undefined;
}
