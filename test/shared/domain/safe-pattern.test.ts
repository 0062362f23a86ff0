import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { compilePattern, patternProblem } from '../../../shared/domain/safe-pattern.js';
import { isThymosError } from '../../../shared/errors/errors.js';

const tool = (pattern: string) => ({
  description: 'a tool',
  sideEffect: 'read_only',
  input: { code: { pattern } },
  executor: { kind: 'http', url: 'http://127.0.0.1:8787/x' },
});

/** The domain error a pattern draws, as `thymos validate` and an agent's start see it. */
function refusal(pattern: string): { code: string; path: string | undefined; message: string } {
  try {
    parseDomainSchema({ tools: { lookup: tool(pattern) } }, 'world.pkl');
  } catch (err) {
    assert.ok(isThymosError(err), String(err));
    return { code: err.code, path: err.location?.path, message: err.message };
  }
  assert.fail(`${pattern} was accepted`);
}

describe('user-supplied patterns are matched by RE2, in time linear in the value', () => {
  test('a nested quantifier that makes a backtracking engine run for minutes answers 34 a and a ! at once: no match', () => {
    const p = compilePattern('(a+)+b');
    assert.equal(p.matches(`${'a'.repeat(34)}!`), false);
    assert.equal(p.matches(`${'a'.repeat(10_000)}!`), false, 'nor does a value as long as a field takes');
    assert.equal(p.matches('aaab'), true);
  });

  test('the whole value must match, alternatives included, and Unicode is read as code points', () => {
    const id = compilePattern('ORD-[0-9]{5}');
    assert.deepEqual(['ORD-48213', 'xORD-48213', 'ORD-482131', 'ORD-4821'].map(id.matches), [true, false, false, false]);
    assert.equal(compilePattern('a|ab').matches('ab'), true, 'anchored around the whole pattern, not its first alternative');
    assert.equal(compilePattern('\\p{L}+').matches('Zoë'), true);
    assert.equal(compilePattern('.').matches('😀'), true, 'one astral character is one character');
    assert.equal(compilePattern('[^@\\s]+@[^@\\s]+\\.[^@\\s]+').matches('ann@example.org'), true);
  });

  test('compiling the same pattern twice gives the one compiled matcher', () => {
    assert.equal(compilePattern('SKU-[A-Z0-9]{3,10}'), compilePattern('SKU-[A-Z0-9]{3,10}'));
  });

  test('a backreference, a lookahead or a lookbehind is refused at validation, naming the tool, the field and what is expected', () => {
    for (const [pattern, what] of [
      ['(a)\\1', /got a backreference `\\1`/],
      ['(?<x>a)\\k<x>', /got a named backreference/],
      ['a(?=b)', /got a lookahead `\(\?=`/],
      ['(?<!x)a', /got a lookbehind `\(\?<!`/],
    ] as const) {
      const { code, path, message } = refusal(pattern);
      assert.equal(code, 'SCHEMA_INVALID');
      assert.equal(path, 'tools.lookup.input.code.pattern');
      assert.match(message, /^domain schema world\.pkl: tools\.lookup\.input\.code\.pattern: expected a regular expression in RE2 syntax/);
      assert.match(message, what);
    }
    const inClass = refusal('([(?=x)])\\1').message;
    assert.match(inClass, /got a backreference/);
    assert.doesNotMatch(inClass, /got a lookahead/, 'what stands in a class is no lookahead');
  });

  test('a pattern only one of the two dialects reads is refused: clients read it as JavaScript, the agent as RE2', () => {
    assert.match(refusal('(?i)abc').message, /not a JavaScript regular expression/, "RE2's inline flags are not JavaScript's");
    assert.match(
      refusal('\\p{Script=Greek}+').message,
      /RE2 syntax .*; got "\\\\p\{Script=Greek\}\+": /,
      "JavaScript's property names are not all RE2's",
    );
    assert.equal(patternProblem('[A-Z]{2}-\\d{4}'), undefined);
    assert.throws(
      () => compilePattern('(a)\\1'),
      (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && /backreference/.test(err.message),
    );
  });
});
