import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT } from './helpers/workspace.js';

test('docs/architecture.md names only files and folders that exist', () => {
  const text = readFileSync(join(REPO_ROOT, 'docs', 'architecture.md'), 'utf8');
  const named = [...text.matchAll(/`([\w.-]+(?:\/[\w.-]+)*\/?)`/g)]
    .map((m) => m[1]!)
    .filter(
      (p) => p.includes('/') && !p.startsWith('<') && /^(agent|supervisor|shared|client|cli|scripts|test|docs|dist|index\.ts)/.test(p),
    );
  assert.ok(named.length > 30, `the page names the files it traces (found ${named.length})`);
  const missing = named.filter((p) => !p.startsWith('dist/') && !existsSync(join(REPO_ROOT, p)));
  assert.deepEqual(missing, []);
});

test('the README names only repository paths that exist', () => {
  const text = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  // Paths of the repository's own folders, in backticks, links or prose; models/ is built (npm run build:model).
  const named = [
    ...new Set(
      [
        ...text.matchAll(
          /(?<![\w./<-])((?:agent|supervisor|shared|client|cli|scripts|test|docs|bench|examples|schemas|patches|\.ci)\/[\w./-]*\w)/g,
        ),
      ].map((m) => m[1]!),
    ),
  ];
  assert.ok(named.length > 15, `the README names repository paths (found ${named.length})`);
  assert.deepEqual(
    named.filter((p) => !existsSync(join(REPO_ROOT, p))),
    [],
  );
});

test("the README's list of Prometheus metrics is the supervisor's, name for name", () => {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const metrics = readFileSync(join(REPO_ROOT, 'supervisor', 'metrics', 'supervisor-metrics.ts'), 'utf8');
  const listed = new Set([...readme.matchAll(/`(thymos_[a-z_]+)[{`]/g)].map((m) => m[1]!));
  const defined = new Set([...metrics.matchAll(/name: '(thymos_[a-z_]+)'/g)].map((m) => m[1]!));
  assert.ok(defined.size >= 10, `the supervisor defines its metrics by name (found ${defined.size})`);
  assert.deepEqual([...listed].sort(), [...defined].sort());
});
