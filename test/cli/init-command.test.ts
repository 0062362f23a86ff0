import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, test } from 'node:test';

import { runThymos } from '../helpers/fleet.js';
import { REPO_ROOT } from '../helpers/workspace.js';

describe('thymos init', () => {
  const root = mkdtempSync(join(tmpdir(), 'thymos-init-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  test('writes a project that validates, amending the schema by a path relative to it, and says what to run next', async () => {
    const made = await runThymos(['init', 'town'], root);
    assert.equal(made.code, 0, made.stderr);
    const dir = join(root, 'town');
    assert.deepEqual(readdirSync(dir).sort(), ['.gitignore', 'README.md', 'context.json', 'loop.mjs', 'thymos.toml', 'world.pkl']);
    const schema = relative(dir, join(REPO_ROOT, 'schemas', 'Thymos.pkl'));
    assert.match(readFileSync(join(dir, 'world.pkl'), 'utf8'), new RegExp(`amends "${schema.replace(/[.]/g, '\\.')}"`));
    assert.match(made.stdout, /next: cd town && npx thymos setup && npx thymos validate && npx thymos up/);
    const valid = await runThymos(['validate', '--json'], dir);
    assert.equal(valid.code, 0, valid.stderr);
    assert.deepEqual((JSON.parse(valid.stdout) as { agents: string[] }).agents, ['gate_guard', 'baker']);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'context.json'), 'utf8')), { tick: 1, global: { player_location: 'gate' } });
  });

  test('never overwrites: a folder with any of its files is FILE_EXISTS, exit 3, and nothing is written', async () => {
    const dir = join(root, 'mine');
    mkdirSync(dir);
    writeFileSync(join(dir, 'README.md'), 'my own readme');
    const refused = await runThymos(['init', '--json'], dir);
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /FILE_EXISTS: .*mine already has README\.md; thymos init writes only into a folder without them/);
    assert.deepEqual(readdirSync(dir), ['README.md']);
    assert.equal(readFileSync(join(dir, 'README.md'), 'utf8'), 'my own readme');
  });

  test('a folder it cannot write is WRITE_FAILED, and what it wrote before failing is taken back', async (t) => {
    if (process.getuid?.() === 0) {
      // root writes through permissions: a file where the folder should be fails the same way for everyone.
      writeFileSync(join(root, 'blocked'), '');
      const failed = await runThymos(['init', 'blocked/town'], root);
      assert.equal(failed.code, 1);
      assert.match(failed.stderr, /WRITE_FAILED: cannot write the project into .*blocked\/town/);
      return;
    }
    const dir = join(root, 'readonly');
    mkdirSync(dir);
    chmodSync(dir, 0o500);
    t.after(() => chmodSync(dir, 0o700));
    const failed = await runThymos(['init'], dir);
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /WRITE_FAILED/);
    assert.deepEqual(readdirSync(dir), []);
  });

  test('two folders are a usage error naming the usage', async () => {
    const two = await runThymos(['init', 'a', 'b'], root);
    assert.equal(two.code, 2);
    assert.match(two.stderr, /expected 0 to 1 argument\(s\), got 2\nusage: thymos init \[DIR\]/);
    assert.equal(existsSync(join(root, 'a')), false);
  });
});
