import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';

import { CompromiseExtractor, EXTRACT_CHARS_MAX } from '../../../shared/platform/concept-extractor.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/** Texts an event can carry that made the alias phrases backtrack over the whole text from every letter. */
const PATHOLOGICAL = {
  letters: `'A'.repeat(100_000)`,
  lowerAfterCapital: `'A' + 'a'.repeat(100_000)`,
  capitalWords: `'Ab '.repeat(33_000)`,
  spaces: `'A' + ' '.repeat(100_000) + 'known as x.'`,
  phrases: `'A known as '.repeat(9_000)`,
  calls: `'A, whom b call '.repeat(6_000)`,
  longOtherName: `'Rowan, known as ' + 'a'.repeat(100_000) + '.'`,
};

/**
 * Extracts each pathological text in a child process that is killed if it is not done by the
 * deadline: a text that blocked the event loop would block a test's own timeout too.
 */
function extractInChild(deadlineMs: number) {
  const texts = `[${Object.values(PATHOLOGICAL).join(', ')}]`;
  const script = `import { CompromiseExtractor, addAliasPhrases } from './shared/platform/concept-extractor.ts';
    const texts = ${texts};
    const found = new Map([['rowan', { name: 'Rowan', type: 'person' }]]);
    for (const text of texts) addAliasPhrases(text, found);
    const concepts = await new CompromiseExtractor().extract(texts);
    process.stdout.write(JSON.stringify({ aliases: [...found.values()].map((c) => c.aliases ?? []), counts: concepts.map((c) => c.length) }));`;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: deadlineMs,
    killSignal: 'SIGKILL',
  });
}

describe('the concept extractor', () => {
  test('long runs of letters, spaces and half-phrases are extracted before a deadline, each text answered', () => {
    const run = extractInChild(10_000);
    assert.equal(run.signal, null, `the child was killed at its deadline: ${run.stderr}`);
    assert.equal(run.status, 0, run.stderr);
    const { aliases, counts } = JSON.parse(run.stdout) as { aliases: string[][]; counts: number[] };
    assert.equal(counts.length, Object.keys(PATHOLOGICAL).length, 'one answer per text');
    assert.deepEqual(aliases, [[]], 'a word longer than any name is no other name for Rowan');
  });

  test('another name is still found, within the first EXTRACT_CHARS_MAX characters of a text only', async () => {
    const extractor = new CompromiseExtractor();
    const phrase = 'Elder Rowan, whom they call the old badger, spoke to Hal, known as the grey miller.';
    const filler = ' The river ran on.'.repeat(Math.ceil(EXTRACT_CHARS_MAX / 18));
    const [near, far] = await extractor.extract([`${phrase}${filler}`, `${filler}${phrase}`]);
    const aliasesOf = (concepts: typeof near) =>
      Object.fromEntries((concepts ?? []).filter((c) => c.aliases).map((c) => [c.name, c.aliases]));
    assert.deepEqual(aliasesOf(near), { Rowan: ['the old badger'], Hal: ['the grey miller'] });
    assert.deepEqual(aliasesOf(far), {}, 'the phrase lies past the characters read');
  });
});
