import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { NameGlob } from '../../../shared/domain/name-glob.js';
import { Rng } from '../../helpers/fuzz.js';

const matches = (glob: string, value: string) => new NameGlob(glob).matches(value);

describe('name globs, read as fnmatch reads them', () => {
  test('a star takes any run of characters, slashes and leading dots included', () => {
    for (const [glob, value] of [
      ['*', 'a/b'],
      ['*', ''],
      ['*', '.hidden'],
      ['danger*', 'danger/high'],
      ['danger*', 'danger/high/very'],
      ['*/high', 'danger/x/high'],
      ['a*b*c', 'a/x/b/y/c'],
      ['threads/*', 'threads/a/b'],
    ]) {
      assert.ok(matches(glob!, value!), `${glob} matches ${value}`);
    }
    assert.ok(!matches('danger*', 'in-danger'), 'a glob is anchored at both ends');
    assert.ok(!matches('a*b', 'a/b/c'));
  });

  test('a question mark is one character, a set one of its characters, and the rest is literal', () => {
    assert.ok(matches('a?c', 'a/c'), '? takes a slash too');
    assert.ok(matches('a?c', 'aéc'), '? takes one character, not one UTF-16 unit');
    assert.ok(!matches('a?c', 'ac'));
    assert.ok(matches('v[0-9]', 'v7') && !matches('v[0-9]', 'vx'));
    assert.ok(matches('v[!0-9]', 'vx') && !matches('v[!0-9]', 'v7'));
    assert.ok(matches('[]x]', ']') && matches('[]x]', 'x'), 'a ] first in a set is one of its characters');
    assert.ok(matches('[*]', '*') && !matches('[*]', 'a'), 'a star in a set is a star');
    assert.ok(matches('a[b', 'a[b'), 'a [ never closed is itself');
    assert.ok(matches('{a,b}', '{a,b}') && !matches('{a,b}', 'a'), 'braces are not alternatives');
    assert.ok(matches('a\\*', 'a\\xyz') && !matches('a\\*', 'a*'), 'a backslash escapes nothing');
    assert.ok(matches('^a.b$', '^a.b$') && !matches('a.b', 'axb'), 'what a regular expression reads is literal');
    assert.deepEqual(
      ['abc', 'a*c', 'a?c', 'a[b]c', 'a{b}c'].map((g) => new NameGlob(g).wild),
      [false, true, true, true, false],
    );
  });

  // A backtracking matcher would not answer this in any lifetime; the deadline fails it.
  test('stars in a row, and many stars, cost no more than the glob times the value', { timeout: 30_000 }, () => {
    assert.equal(new NameGlob(`${'*a'.repeat(30)}*b`).matches('a'.repeat(5000)), false);
    assert.ok(new NameGlob('a***b').matches('a/x/b'));
  });

  test('fuzzed globs agree with a plain recursive reading of the rule', () => {
    const r = new Rng(71);
    const alphabet = ['a', 'b', '/', '.', '*', '?', '[a]', '[!a]', '[a-b]'];
    const values = ['a', 'b', '/', '.', 'c'];
    for (let i = 0; i < 3000; i++) {
      const tokens = Array.from({ length: r.int(6) }, () => alphabet[r.int(alphabet.length)]!);
      const value = Array.from({ length: r.int(7) }, () => values[r.int(values.length)]).join('');
      assert.equal(
        new NameGlob(tokens.join('')).matches(value),
        reference(tokens, value),
        `${tokens.join('')} against ${JSON.stringify(value)}`,
      );
    }
  });
});

/** The rule read literally, token by token; exponential, so only for short globs. */
function reference(tokens: readonly string[], value: string): boolean {
  if (tokens.length === 0) return value === '';
  const [t, ...rest] = tokens;
  if (t === '*') return [...Array(value.length + 1).keys()].some((k) => reference(rest, value.slice(k)));
  if (value === '') return false;
  const c = value[0]!;
  const hit = t === '?' ? true : t === '[a]' ? c === 'a' : t === '[!a]' ? c !== 'a' : t === '[a-b]' ? c === 'a' || c === 'b' : c === t;
  return hit && reference(rest, value.slice(1));
}
