import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { isThymosError } from '../../../shared/errors/errors.js';
import { AgentArchive } from '../../../supervisor/lifecycle/agent-archive.js';
import { type ArchiveStore, LocalArchiveStore } from '../../../supervisor/lifecycle/archive-store.js';
import { tempDir } from '../../helpers/temp-dir.js';

function fleet() {
  const root = tempDir('thymos-archive-');
  const paths = { agents: join(root, 'agents'), archive: join(root, 'archive') };
  mkdirSync(join(paths.agents, 'mira'), { recursive: true });
  writeFileSync(join(paths.agents, 'mira', 'memory.db'), 'what mira remembers');
  writeFileSync(join(paths.agents, 'mira', 'agent.pid'), '12345');
  return paths;
}

/** A store that records the token of each write, over the local one. */
function recording(dir: string): ArchiveStore & { writes: Array<[string, string, number]> } {
  const local = new LocalArchiveStore(dir);
  const writes: Array<[string, string, number]> = [];
  return {
    writes,
    put: (id, file, token) => (writes.push(['put', id, token]), local.put(id, file, token)),
    get: (id) => local.get(id),
    delete: (id, token) => (writes.push(['delete', id, token]), local.delete(id, token)),
    list: () => local.list(),
    where: (id) => local.where(id),
  };
}

test('an agent packs into the store and back, each write carrying the claim token; the lock file does not come back', async () => {
  const paths = fleet();
  const store = recording(paths.archive);
  const archive = new AgentArchive(paths, store);
  await archive.pack('mira', 7);
  assert.equal(existsSync(join(paths.agents, 'mira')), false);
  assert.deepEqual(await store.list(), ['mira']);
  assert.equal(await store.get('mira'), join(paths.archive, 'mira.tar.gz'));
  await archive.unpack('mira', 8);
  assert.equal(readFileSync(join(paths.agents, 'mira', 'memory.db'), 'utf8'), 'what mira remembers');
  assert.equal(existsSync(join(paths.agents, 'mira', 'agent.pid')), false);
  assert.deepEqual(await store.list(), []);
  assert.deepEqual(store.writes, [
    ['put', 'mira', 7],
    ['delete', 'mira', 8],
  ]);
});

test('packing or unpacking twice (a crash between the store write and the removal) finishes the first and loses nothing', async () => {
  const paths = fleet();
  const archive = new AgentArchive(paths);
  await archive.pack('mira', 1);
  await archive.pack('mira', 1);
  assert.deepEqual(await new LocalArchiveStore(paths.archive).list(), ['mira']);
  await archive.unpack('mira', 2);
  await archive.unpack('mira', 2);
  assert.equal(readFileSync(join(paths.agents, 'mira', 'memory.db'), 'utf8'), 'what mira remembers');
});

test('a store that fails a write leaves the data where it was, and the error names the store', async () => {
  const paths = fleet();
  const failing: ArchiveStore = {
    ...new LocalArchiveStore(paths.archive),
    put: () => Promise.reject(new Error('the store refused the write')),
    get: () => Promise.resolve(undefined),
    list: () => Promise.resolve([]),
    where: (id) => `remote:${id}`,
    delete: () => Promise.resolve(),
  };
  await assert.rejects(
    new AgentArchive(paths, failing).pack('mira', 3),
    (err) => isThymosError(err, 'ARCHIVE_ERROR') && /remote:mira/.test(err.message) && /refused the write/.test(err.message),
  );
  assert.equal(readFileSync(join(paths.agents, 'mira', 'memory.db'), 'utf8'), 'what mira remembers');
  assert.equal(existsSync(join(paths.archive, 'mira.tar.gz.partial')), false, 'no partial archive is left behind');
  await assert.rejects(
    new AgentArchive(paths).unpack('bram', 3),
    (err) => isThymosError(err, 'ARCHIVE_ERROR') && /no archive for bram/.test(err.message),
  );
});
