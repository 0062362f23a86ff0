import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

import { build } from 'esbuild';
import ts from 'typescript';

import { REPO_ROOT } from './helpers/workspace.js';

const SIDES = ['agent', 'supervisor', 'shared', 'client', 'cli'] as const;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
    (m) => (m[1] ?? m[2])!,
  );
}

/** Repository-relative path of the .ts file a relative import names. */
function target(file: string, spec: string): string {
  return relative(REPO_ROOT, resolve(dirname(file), spec))
    .replace(/\\/g, '/')
    .replace(/\.js$/, '.ts');
}

const rel = (file: string) => relative(REPO_ROOT, file).replace(/\\/g, '/');
const allSources = SIDES.flatMap((side) => sources(join(REPO_ROOT, side)));
/** Folders by concern: every folder one level inside agent/, supervisor/ and shared/. */
const concernFolders = ['agent', 'supervisor', 'shared'].flatMap((side) =>
  readdirSync(join(REPO_ROOT, side))
    .filter((name) => statSync(join(REPO_ROOT, side, name)).isDirectory())
    .map((name) => `${side}/${name}`),
);

/** Every relative import of the source tree as an edge between repository-relative files. */
function edges(): Array<{ from: string; to: string; spec: string }> {
  return allSources.flatMap((file) =>
    imports(file)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => ({ from: rel(file), to: target(file, spec), spec })),
  );
}

/** The circles of a directed graph, each as the path that closes it. */
function circles(graph: Map<string, Set<string>>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, path: string[]) => {
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next].join(' → '));
      else if (!state.has(next)) visit(next, [...path, next]);
    }
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node, [node]);
  return found;
}

function graphOf(pairs: Array<[string, string]>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [a, b] of pairs) if (a !== b) (graph.get(a) ?? graph.set(a, new Set()).get(a)!).add(b);
  return graph;
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
        if (
          spec.startsWith('.') &&
          new RegExp(`(^|/)${forbidden}/`).test(join(relative(REPO_ROOT, join(file, '..')), spec).replace(/\\/g, '/'))
        ) {
          offences.push(`${relative(REPO_ROOT, file)} imports ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(offences, []);
});

test('shared/ is layered: errors, config, domain, protocol, platform, nats, engines — each imports only those before it', () => {
  const order = ['shared/errors', 'shared/config', 'shared/domain', 'shared/protocol', 'shared/platform', 'shared/nats', 'shared/engines'];
  assert.deepEqual(
    concernFolders.filter((f) => f.startsWith('shared/')).sort(),
    [...order].sort(),
    'every folder of shared/ has its place in the order',
  );
  const offences = edges()
    .filter((e) => order.includes(dirname(e.from)) && order.includes(dirname(e.to)))
    .filter((e) => order.indexOf(dirname(e.to)) > order.indexOf(dirname(e.from)))
    .map((e) => `${e.from} imports ${e.spec}`);
  assert.deepEqual(offences, []);
});

test('supervisor/ is split by concern, and each folder imports only the folders named for it', () => {
  // pm2 runs processes; nats-server is the fleet's server; launch starts both. The lifecycle moves one
  // agent under the claim ownership grants; relevance scores; the reconcile decides and moves through the lifecycle; process wires it all.
  const may: Record<string, string[]> = {
    pm2: [],
    'nats-server': ['pm2'],
    launch: ['pm2', 'nats-server'],
    metrics: [],
    ownership: [],
    lifecycle: ['pm2', 'nats-server', 'metrics', 'ownership'],
    relevance: [],
    events: [],
    reconcile: ['pm2', 'nats-server', 'metrics', 'ownership', 'lifecycle', 'relevance'],
    api: [],
    world: ['api'],
    embedding: [],
    process: ['pm2', 'nats-server', 'metrics', 'ownership', 'lifecycle', 'relevance', 'events', 'reconcile', 'api', 'world', 'embedding'],
  };
  const folders = concernFolders.filter((f) => f.startsWith('supervisor/')).map((f) => f.slice('supervisor/'.length));
  assert.deepEqual(folders.sort(), Object.keys(may).sort(), 'every folder of supervisor/ has its rule');
  const offences = edges()
    .filter((e) => e.from.startsWith('supervisor/') && e.to.startsWith('supervisor/'))
    .map((e) => ({ ...e, a: e.from.split('/')[1]!, b: e.to.split('/')[1]! }))
    .filter((e) => e.a !== e.b && e.from !== 'supervisor/index.ts' && !may[e.a]?.includes(e.b))
    .map((e) => `${e.from} imports ${e.spec}`);
  assert.deepEqual(offences, []);
});

test('no import circles between files, type-only imports included', () => {
  assert.deepEqual(circles(graphOf(edges().map((e) => [e.from, e.to]))), []);
});

test('no import circles between folders', () => {
  const pairs = edges()
    .filter((e) => !e.from.endsWith('/index.ts') && e.from !== 'index.ts')
    .map((e): [string, string] => [dirname(e.from), dirname(e.to)]);
  assert.deepEqual(circles(graphOf(pairs)), []);
});

test('every layer of shared/ has an index.ts that says what lives there and names every export other folders take from it', () => {
  const offences: string[] = [];
  const listed = new Map<string, Set<string>>();
  for (const folder of concernFolders.filter((f) => f.startsWith('shared/'))) {
    const index = join(REPO_ROOT, folder, 'index.ts');
    if (!existsSync(index)) {
      offences.push(`${folder}/index.ts is missing`);
      continue;
    }
    const text = readFileSync(index, 'utf8');
    if (!/^\/\*\*\s*\n\s*\*\s*\S/.test(text)) offences.push(`${folder}/index.ts does not open with a statement of what lives there`);
    if (/export \*/.test(text)) offences.push(`${folder}/index.ts re-exports with a wildcard`);
    const names = new Set(
      [...text.matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((m) =>
        m[1]!
          .split(',')
          .map((n) => n.trim().replace(/^type\s+/, ''))
          .filter(Boolean),
      ),
    );
    listed.set(folder, names);
  }
  for (const file of allSources) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(\.[^']+)'/g)) {
      const to = target(file, m[2]!);
      const folder = dirname(to);
      if (!listed.has(folder) || dirname(rel(file)) === folder || rel(file) === `${folder}/index.ts`) continue;
      for (const name of m[1]!
        .split(',')
        .map(
          (n) =>
            n
              .trim()
              .replace(/^type\s+/, '')
              .split(/\s+as\s+/)[0]!,
        )
        .filter(Boolean)) {
        if (!listed.get(folder)!.has(name)) offences.push(`${rel(file)} takes ${name} from ${to}, which ${folder}/index.ts does not name`);
      }
    }
  }
  assert.deepEqual(offences, []);
});

test('outside shared/, a layer of shared/ is reached through its index, lazy imports too; inside agent/ and supervisor/ an import names its file', () => {
  // A folder index inside agent/ or supervisor/ would load its whole folder: an agent's start and a
  // spare load their links and MCP server lazily, and an import that names its file keeps it so.
  const offences: string[] = [];
  for (const file of allSources.filter((f) => !rel(f).startsWith('shared/'))) {
    for (const spec of imports(file).filter((s) => s.startsWith('.'))) {
      const to = target(file, spec);
      if (/^shared\/[^/]+\/[^/]+\.ts$/.test(to) && !to.endsWith('/index.ts'))
        offences.push(`${rel(file)} imports ${spec}, inside a layer of shared/`);
    }
  }
  for (const folder of concernFolders.filter((f) => !f.startsWith('shared/')))
    if (existsSync(join(REPO_ROOT, folder, 'index.ts')))
      offences.push(`${folder}/index.ts: folders of agent/ and supervisor/ have no index`);
  assert.deepEqual(offences, []);
});

test('NATS request/reply goes through the coded helpers only, and no reply is cast', () => {
  const helpers = new Set(['shared/nats/coded-request.ts', 'shared/nats/coded-responder.ts']);
  const offences: string[] = [];
  for (const file of allSources) {
    const path = rel(file);
    if (helpers.has(path)) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const at = `${path}:${i + 1}`;
        if (/\.respond\(/.test(line)) offences.push(`${at}: .respond( outside the coded responder`);
        if (/\b(nc|#nc|connection\(\)|natsConnection)\)?\.request\(/.test(line))
          offences.push(`${at}: NATS .request( outside the coded requester`);
        if (/\b(reply|msg|m)\b[\w.()]*\s+as\s+[A-Z{]/.test(line) || /\.json<|\bresult as\b/.test(line))
          offences.push(`${at}: a reply cast instead of validated`);
      });
  }
  assert.deepEqual(offences, []);
});

test('subjects and stream names are spelled only in the fleet names module', () => {
  const offences: string[] = [];
  for (const file of allSources) {
    const path = rel(file);
    if (path === 'shared/protocol/fleet-names.ts') continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (/^\s*(\/\*|\*|\/\/)/.test(line)) return;
        if (/['"`](thymos\.(agent|events|supervisor|world|embed)\b|THYMOS_(EVENTS|INBOX)\b)/.test(line))
          offences.push(`${path}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(offences, []);
});

test('tests mirror the source folders, and the client and the CLI have their own', () => {
  const offences: string[] = [];
  for (const side of ['agent', 'supervisor', 'shared']) {
    const dir = join(REPO_ROOT, 'test', side);
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory() ? !existsSync(join(REPO_ROOT, side, name)) : true)
        offences.push(`test/${side}/${name} has no source folder ${side}/${name}`);
    }
  }
  for (const side of ['client', 'cli']) if (!existsSync(join(REPO_ROOT, 'test', side))) offences.push(`test/${side} is missing`);
  assert.deepEqual(offences, []);
});

test('no source file over 400 lines and no function over 80: the hubs stay split', () => {
  const offences: string[] = [];
  for (const file of allSources) {
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').length;
    if (lines > 400) offences.push(`${rel(file)}: ${lines} lines`);
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const line = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const length = line(node.end) - line(node.getStart(source)) + 1;
        if (length > 80)
          offences.push(
            `${rel(file)}:${line(node.getStart(source))} ${node.name?.getText(source) ?? '(anonymous function)'}: ${length} lines`,
          );
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
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

test('thymos/client reaches neither SurrealDB, nor pm2, nor the MCP server side, through any import, lazy ones and packages included', async () => {
  // esbuild follows every import a bundler would, dynamic ones and those inside packages, and
  // drops type-only ones, as Node does: what it reads is all `thymos/client` can ever load.
  const { metafile } = await build({
    entryPoints: [join(REPO_ROOT, 'client', 'index.ts')],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    write: false,
    metafile: true,
    outdir: 'out',
    logLevel: 'silent',
  });
  const inputs = Object.keys(metafile.inputs);
  // An import of a name computed at run time is one esbuild cannot follow: none in the files it reached here.
  const computed = inputs.filter(
    (p) => !p.includes('node_modules/') && /\bimport\(\s*[^'"\s]/.test(readFileSync(join(REPO_ROOT, p), 'utf8')),
  );
  assert.deepEqual(computed, []);
  assert.ok(
    inputs.some((p) => p.startsWith('node_modules/@modelcontextprotocol/sdk/dist/esm/client/')),
    'the graph reaches the MCP client, so packages are followed',
  );
  // The SDK's client shares three helper files that live under server/ (zod-compat,
  // zod-json-schema-compat, auth/errors); the server side is the rest of that folder.
  const sharedHelpers = /server\/(zod-compat|zod-json-schema-compat|auth\/errors)\.js$/;
  const forbidden = [
    'surrealdb',
    '@surrealdb',
    'pm2',
    'pino',
    'fastembed',
    '@pkl-community',
    'express',
    'hono',
    '@hono',
    '@modelcontextprotocol/sdk/dist/esm/server',
  ].map((p) => new RegExp(`(^|/)node_modules/${p}/`));
  assert.deepEqual(
    inputs.filter((p) => forbidden.some((f) => f.test(p)) && !sharedHelpers.test(p)),
    [],
  );
  assert.deepEqual(
    inputs.filter((p) => /^(agent|supervisor|cli)\//.test(p)),
    [],
    'nor the agent, supervisor or CLI folders',
  );
});

test('each entry point in package.json exports names a folder index that is built', () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, { types: string; default: string } | string>;
  };
  assert.deepEqual(Object.keys(pkg.exports).sort(), ['.', './agent', './client', './package.json', './supervisor']);
  for (const [entry, to] of Object.entries(pkg.exports)) {
    if (typeof to === 'string') continue;
    const source = to.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');
    assert.ok(existsSync(join(REPO_ROOT, source)), `${entry} → ${to.default}: ${source} exists`);
    assert.equal(to.types, to.default.replace(/\.js$/, '.d.ts'), `${entry}: types beside the code`);
  }
});
