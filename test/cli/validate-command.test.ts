import assert from 'node:assert/strict';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { runThymos } from '../helpers/fleet.js';
import { tempDir } from '../helpers/temp-dir.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../helpers/workspace.js';

/** The compiled `thymos validate`, on a project whose Pkl module reads a file of its folder. */
describe('thymos validate and what the domain reads', () => {
  const made: Workspace[] = [];
  after(() => made.forEach((ws) => ws.dispose()));

  function project(files: (dir: string) => void): Workspace {
    const ws = createWorkspace({ schema: 'world.pkl' });
    made.push(ws);
    writeFileSync(
      join(ws.dir, 'world.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}\nprompts { ["persona"] = read("notes.txt").text }\n`,
    );
    files(ws.dir);
    return ws;
  }

  test('a link into /proc is SCHEMA_READ_REFUSED, exit 2, naming the link and its target, as loadDomainSchema refuses it', async () => {
    const ws = project((dir) => symlinkSync('/proc/self/environ', join(dir, 'notes.txt')));
    const refused = await runThymos(['validate'], ws.dir);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, new RegExp(`SCHEMA_READ_REFUSED: .*the link ${join(ws.dir, 'notes.txt')} points to /proc/\\d+/environ`));
    const json = await runThymos(['validate', '--json'], ws.dir);
    assert.equal(json.code, 2);
    assert.match(json.stderr + json.stdout, /SCHEMA_READ_REFUSED/);
  });

  test('a link to a file outside the project is refused too; a plain file of the project validates', async () => {
    const outside = join(tempDir('thymos-outside-'), 'token.txt');
    writeFileSync(outside, 'thymos-token-5b1e');
    const linked = project((dir) => symlinkSync(outside, join(dir, 'notes.txt')));
    const refused = await runThymos(['validate'], linked.dir);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /SCHEMA_READ_REFUSED: .*token\.txt/);
    assert.doesNotMatch(refused.stderr + refused.stdout, /thymos-token-5b1e/);
    const plain = project((dir) => writeFileSync(join(dir, 'notes.txt'), 'You keep the gate.'));
    const ok = await runThymos(['validate'], plain.dir);
    assert.equal(ok.code, 0, ok.stderr);
  });
});
