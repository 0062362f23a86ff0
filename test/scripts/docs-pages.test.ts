import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { COMMANDS } from '../../cli/command-book.js';
import { cliPage, configurationPage, GENERATED_PAGES } from '../../scripts/docs-pages.js';
import { ThymosConfigSchema } from '../../shared/config/index.js';
import { REPO_ROOT } from '../helpers/workspace.js';

for (const page of GENERATED_PAGES) {
  test(`${page.path} is what npm run docs writes from the code now`, () => {
    const committed = readFileSync(join(REPO_ROOT, page.path), 'utf8');
    assert.ok(committed === page.render(), `${page.path} is stale: run \`npm run docs\` and commit it`);
  });
}

test('the configuration page has a row for every key of thymos.toml, nested sections too, with its default', () => {
  const text = configurationPage();
  /** The table under one heading. */
  const section = (heading: string) => {
    const start = text.indexOf(`\n## ${heading}\n`);
    if (start < 0) return '';
    const end = text.indexOf('\n## ', start + 1);
    return text.slice(start, end < 0 ? undefined : end);
  };
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const missing: string[] = [];
  const walk = (path: string[], values: Record<string, unknown>) => {
    const body = section(path.length === 0 ? 'Top level' : `\`[${path.join('.')}]\``);
    for (const [key, value] of Object.entries(values)) {
      const sub = [...path, key];
      // A section of its own (`[llm.dialogue]`), or one whose keys are all sections (`[llm]`).
      if (isObject(value) && new RegExp(`\\n## \`\\[${sub.join('\\.')}[\\].]`).test(text)) walk(sub, value);
      else if (!body.includes(`| \`${key}\` |`)) missing.push(sub.join('.'));
    }
  };
  walk([], ThymosConfigSchema.parse({}) as unknown as Record<string, unknown>);
  assert.deepEqual(missing, []);
  assert.match(text, /^\| `threshold_active` \| `0\.7` \| A score at or above this makes an agent Active\. \|$/m);
  assert.match(text, /^## `\[llm\.dialogue\]`$/m);
});

test('the CLI page has every command with the help it prints', () => {
  const text = cliPage();
  for (const spec of COMMANDS) {
    assert.match(text, new RegExp(`^## thymos ${spec.name}\\n\\n\`\`\`text\\nusage: thymos ${spec.name}`, 'm'));
    for (const example of spec.examples) assert.ok(text.includes(`  ${example}\n`), `${spec.name}'s example: ${example}`);
  }
});
