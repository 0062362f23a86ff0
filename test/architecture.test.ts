import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT } from './helpers/workspace.js';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => (m[1] ?? m[2])!);
}

test('agent/ and supervisor/ never import each other; shared/ imports neither; client/ speaks only through shared/', () => {
  const offences: string[] = [];
  for (const [from, forbidden] of [
    ['agent', 'supervisor'],
    ['supervisor', 'agent'],
    ['shared', 'agent'],
    ['shared', 'supervisor'],
    ['shared', 'client'],
    ['client', 'agent'],
    ['client', 'supervisor'],
    ['agent', 'client'],
    ['supervisor', 'client'],
  ] as const) {
    for (const file of sources(join(REPO_ROOT, from))) {
      for (const spec of imports(file)) {
        if (spec.startsWith('.') && new RegExp(`(^|/)${forbidden}/`).test(join(relative(REPO_ROOT, join(file, '..')), spec).replace(/\\/g, '/'))) {
          offences.push(`${relative(REPO_ROOT, file)} imports ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(offences, []);
});

test('the thymos bin is compiled JavaScript, so agents start without tsx', () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: { thymos: string } };
  assert.match(pkg.bin.thymos, /^dist\/.*\.js$/);
  const compiled = readFileSync(join(REPO_ROOT, pkg.bin.thymos), 'utf8');
  assert.match(compiled, /^#!\/usr\/bin\/env node/);
  assert.doesNotMatch(compiled, /tsx/);
});

test('every code folder has an index.ts that names its exports (no wildcard re-exports)', () => {
  for (const dir of ['agent', 'shared', 'supervisor', 'client']) {
    const text = readFileSync(join(REPO_ROOT, dir, 'index.ts'), 'utf8');
    assert.doesNotMatch(text, /export \*/, `${dir}/index.ts`);
  }
});
