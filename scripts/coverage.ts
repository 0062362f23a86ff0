/**
 * Line and branch coverage of the library and of every process the tests start: agents and
 * the supervisor under pm2, the `thymos` command, agents the tests spawn themselves.
 *
 * Each test file runs with NODE_V8_COVERAGE set; the variable reaches every pm2 daemon a test
 * starts (pm2 hands its environment to the apps it runs), and processes that stop gracefully
 * write their coverage as they exit. After each file the raw dumps are cut down to this
 * repository's scripts (no Node internals, no node_modules, one copy of each source map) and
 * merged into one file, so disk use stays at one merged file however many
 * agents the tests start. c8 then maps the compiled bundle and tsx's output back to the
 * TypeScript, and this script prints the table by folder, writes docs/coverage.md and fails
 * below the floors.
 *
 * usage: node --import tsx scripts/coverage.ts [test files…]   (default: every test/**\/*.test.ts)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The floors sit at the figures reached (docs/coverage.md), rounded down to a whole percent:
// paths taken only on a slow machine (retries, deadlines) move a run's figure by a few tenths.
/** Lines covered overall, at least (percent). */
const FLOOR_LINES = 94;
/** Branches covered overall, at least (percent). */
const FLOOR_BRANCHES = 86;
/** Lines covered in every folder, at least (percent). */
const FLOOR_FOLDER_LINES = 85;

interface ScriptCov {
  url: string;
  functions: unknown[];
}
interface ProcessCov {
  result: ScriptCov[];
  'source-map-cache'?: Record<string, unknown>;
}

const require = createRequire(import.meta.url);
const { mergeProcessCovs } = require('@bcoe/v8-coverage') as { mergeProcessCovs(covs: ProcessCov[]): ProcessCov };

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT_URL = pathToFileURL(ROOT).href + '/';
const SOURCE_FOLDERS = ['agent', 'supervisor', 'shared', 'client', 'cli'];
const MERGED = join(ROOT, 'coverage', 'v8');
const MERGED_FILE = join(MERGED, 'coverage-merged.json');

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? testFiles(path) : name.endsWith('.test.ts') ? [path] : [];
    })
    .sort();
}

/** A script of this repository's code (sources run through tsx, or the compiled dist/), not of a dependency or of Node. */
function ours(url: string): boolean {
  if (!url.startsWith(ROOT_URL) || url.includes('/node_modules/')) return false;
  const path = url.slice(ROOT_URL.length);
  return path.startsWith('dist/') || path === 'index.ts' || SOURCE_FOLDERS.some((folder) => path.startsWith(`${folder}/`));
}

interface SourceMapEntry {
  data?: { sources?: string[]; sourceRoot?: string } | null;
}

/**
 * Node hands the bundle's map over with its sources as file URLs. c8 checks a source's name
 * against the include patterns as it is, so a URL never matches, and the functions a process
 * never called would count as covered; plain absolute paths match.
 */
function withAbsoluteSources(url: string, entry: SourceMapEntry): SourceMapEntry {
  if (!entry.data?.sources || url.endsWith('.ts')) return entry;
  const dir = dirname(fileURLToPath(url));
  const path = (source: string) =>
    source.startsWith('file:') ? fileURLToPath(source) : resolve(dir, entry.data?.sourceRoot ?? '', source);
  return { ...entry, data: { ...entry.data, sources: entry.data.sources.map(path), sourceRoot: '' } };
}

/**
 * Folds the raw dumps in `raw` into the merged file and deletes them: only this repository's
 * scripts, and one copy of each script's source map however many processes ran it.
 */
function fold(raw: string): { dumps: number; bytes: number } {
  const covs: ProcessCov[] = [];
  try {
    covs.push(JSON.parse(readFileSync(MERGED_FILE, 'utf8')) as ProcessCov);
  } catch {
    // the first fold
  }
  const maps: Record<string, unknown> = covs[0]?.['source-map-cache'] ?? {};
  let dumps = 0;
  let bytes = 0;
  for (const name of readdirSync(raw)) {
    const file = join(raw, name);
    let cov: ProcessCov;
    try {
      bytes += statSync(file).size;
      cov = JSON.parse(readFileSync(file, 'utf8')) as ProcessCov;
    } catch {
      continue; // a dump cut short by a killed process
    } finally {
      rmSync(file, { force: true });
    }
    dumps++;
    const result = cov.result.filter((script) => ours(script.url));
    for (const script of result) {
      const map = cov['source-map-cache']?.[script.url] as SourceMapEntry | undefined;
      if (map && !maps[script.url]) maps[script.url] = withAbsoluteSources(script.url, map);
    }
    covs.push({ result });
  }
  const merged = mergeProcessCovs(covs);
  writeFileSync(MERGED_FILE, JSON.stringify({ ...merged, 'source-map-cache': maps }));
  return { dumps, bytes };
}

function runTestFile(file: string, raw: string): Promise<number> {
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-force-exit', '--test-timeout=600000', file],
      {
        cwd: ROOT,
        stdio: 'inherit',
        env: { ...process.env, NODE_V8_COVERAGE: raw },
      },
    );
    child.on('exit', (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}

interface Totals {
  lines: { total: number; covered: number };
  branches: { total: number; covered: number };
}

/** The folder a source file counts under: `agent/memory`, `client`, `index.ts`. */
function folderOf(path: string): string {
  const parts = path.split('/');
  if (parts.length === 1) return path;
  return parts[0] === 'agent' || parts[0] === 'supervisor' || parts[0] === 'shared' ? parts.slice(0, 2).join('/') : parts[0]!;
}

function percent(part: { total: number; covered: number }): number {
  return part.total === 0 ? 100 : (100 * part.covered) / part.total;
}

function table(byFolder: Map<string, Totals>, all: Totals): string {
  const rows = [...byFolder.entries()].sort(([a], [b]) => a.localeCompare(b));
  const line = (name: string, t: Totals) =>
    `| ${name} | ${percent(t.lines).toFixed(1)} % | ${t.lines.covered}/${t.lines.total} | ${percent(t.branches).toFixed(1)} % | ${t.branches.covered}/${t.branches.total} |`;
  return [
    '| folder | lines | covered/total | branches | covered/total |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...rows.map(([name, t]) => line(name, t)),
    line('**all**', all),
  ].join('\n');
}

async function main(): Promise<void> {
  const files = process.argv.length > 2 ? process.argv.slice(2).map((f) => resolve(f)) : testFiles(join(ROOT, 'test'));
  rmSync(join(ROOT, 'coverage'), { recursive: true, force: true });
  mkdirSync(MERGED, { recursive: true });
  const raw = mkdtempSync(join(tmpdir(), 'thymos-v8-'));
  const failed: string[] = [];
  const started = performance.now();
  let dumps = 0;
  let peakBytes = 0;
  try {
    for (const file of files) {
      const code = await runTestFile(file, raw);
      if (code !== 0) failed.push(relative(ROOT, file));
      const folded = fold(raw);
      dumps += folded.dumps;
      peakBytes = Math.max(peakBytes, folded.bytes);
    }
  } finally {
    rmSync(raw, { recursive: true, force: true });
  }
  const c8 = spawnSync(
    process.execPath,
    [
      require.resolve('c8/bin/c8.js'),
      'report',
      '--temp-directory',
      MERGED,
      '--reports-dir',
      join(ROOT, 'coverage'),
      '--reporter',
      'json-summary',
      '--reporter',
      'html',
      '--all',
      '--exclude-after-remap',
      ...['agent', 'supervisor', 'shared', 'client', 'cli'].flatMap((f) => ['--include', `${f}/**/*.ts`]),
      '--include',
      'index.ts',
      '--src',
      ROOT,
    ],
    { cwd: ROOT, stdio: 'inherit' },
  );
  if (c8.status !== 0) throw new Error(`c8 report failed (${c8.status})`);

  const summary = JSON.parse(readFileSync(join(ROOT, 'coverage', 'coverage-summary.json'), 'utf8')) as Record<string, Totals>;
  const byFolder = new Map<string, Totals>();
  const add = (into: Totals, from: Totals) => {
    into.lines.total += from.lines.total;
    into.lines.covered += from.lines.covered;
    into.branches.total += from.branches.total;
    into.branches.covered += from.branches.covered;
  };
  const zero = (): Totals => ({ lines: { total: 0, covered: 0 }, branches: { total: 0, covered: 0 } });
  const all = zero();
  for (const [file, totals] of Object.entries(summary)) {
    if (file === 'total') continue;
    const folder = folderOf(relative(ROOT, file).replace(/\\/g, '/'));
    add(byFolder.get(folder) ?? byFolder.set(folder, zero()).get(folder)!, totals);
    add(all, totals);
  }
  const text = table(byFolder, all);
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  const mb = (n: number) => `${(n / 1e6).toFixed(0)} MB`;
  const cost = `${minutes} min; raw dumps at most ${mb(peakBytes)} for one test file, merged ${mb(statSync(MERGED_FILE).size)}`;
  console.log(`\ncoverage of ${files.length} test files and ${dumps} processes (${cost}):\n\n${text}\n`);

  const below = [
    ...(percent(all.lines) < FLOOR_LINES ? [`lines ${percent(all.lines).toFixed(1)} % < ${FLOOR_LINES} %`] : []),
    ...(percent(all.branches) < FLOOR_BRANCHES ? [`branches ${percent(all.branches).toFixed(1)} % < ${FLOOR_BRANCHES} %`] : []),
    ...[...byFolder.entries()]
      .filter(([, t]) => percent(t.lines) < FLOOR_FOLDER_LINES)
      .map(([name, t]) => `${name}: lines ${percent(t.lines).toFixed(1)} % < ${FLOOR_FOLDER_LINES} %`),
  ];
  if (process.argv.length <= 2) {
    const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
    writeFileSync(
      join(ROOT, 'docs', 'coverage.md'),
      `# Coverage\n\nWritten by \`npm run coverage\` (scripts/coverage.ts) on ${new Date().toISOString().slice(0, 10)}, commit ${commit}, Node ${process.version}: ` +
        `line and branch coverage of the library and of every process the tests start (agents and the supervisor under pm2, the \`thymos\` command), ` +
        `mapped back to the TypeScript. ${files.length} test files, ${dumps} processes; ${cost}. Floors: lines ${FLOOR_LINES} % overall and ${FLOOR_FOLDER_LINES} % in every folder, branches ${FLOOR_BRANCHES} % overall.\n\n${text}\n`,
    );
  }
  if (failed.length > 0) console.error(`failing test files: ${failed.join(', ')}`);
  if (below.length > 0) console.error(`coverage below the floor: ${below.join('; ')}`);
  process.exit(failed.length > 0 || below.length > 0 ? 1 : 0);
}

await main();
