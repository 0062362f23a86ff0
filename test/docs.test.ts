import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT } from './helpers/workspace.js';

test('docs/architecture.md names only files and folders that exist', () => {
  const text = readFileSync(join(REPO_ROOT, 'docs', 'architecture.md'), 'utf8');
  const named = [...text.matchAll(/`([\w.-]+(?:\/[\w.-]+)*\/?)`/g)].map((m) => m[1]!).filter((p) => p.includes('/') && !p.startsWith('<') && /^(agent|supervisor|shared|client|cli|scripts|test|docs|dist|index\.ts)/.test(p));
  assert.ok(named.length > 30, `the page names the files it traces (found ${named.length})`);
  const missing = named.filter((p) => !p.startsWith('dist/') && !existsSync(join(REPO_ROOT, p)));
  assert.deepEqual(missing, []);
});
