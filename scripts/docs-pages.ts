/**
 * Writes the manual's generated pages, so they cannot drift from the code:
 *
 * - docs/configuration.md: every key of `thymos.toml`, from the zod schema in `shared/config/`
 *   (the keys, and the defaults the schema fills in) and the doc comments on its keys (what each
 *   does, its `@default` and `@example`);
 * - docs/cli.md: every `thymos` command, as its help prints it (`cli/command-book.ts`).
 *
 * `test/scripts/docs-pages.test.ts` builds both in memory and fails when a committed page differs.
 *
 * usage: npm run docs   (node --import tsx scripts/docs-pages.ts)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';

import { commandHelp, COMMANDS, globalHelp } from '../cli/command-book.js';
import { ThymosConfigSchema } from '../shared/config/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CONFIG_FOLDER = 'shared/config';
/** The schema files whose keys and doc comments make the configuration page; the whole file's schema is in the first. */
const CONFIG_FILES = [
  'thymos-config.ts',
  'fleet-settings.ts',
  'host-settings.ts',
  'cluster-settings.ts',
  'agent-settings.ts',
  'llm-settings.ts',
];
/** The object schema of the whole file (`ThymosConfigSchema` is it with its cross-section checks). */
const ROOT_SCHEMA = 'ThymosBaseSchema';

/** The generated pages: where each goes, relative to the repository, and how it is made. */
export const GENERATED_PAGES: ReadonlyArray<{ path: string; render: () => string }> = [
  { path: 'docs/configuration.md', render: configurationPage },
  { path: 'docs/cli.md', render: cliPage },
];

/** One key of `thymos.toml`: its doc comment, and the section it opens when its value is an object schema. */
interface KeyDoc {
  name: string;
  text: string;
  defaultTag: string | undefined;
  example: string | undefined;
  /** The object schema this key's value is (`llm.dialogue`), when it is one. */
  section: string | undefined;
}

/**
 * Every object literal a schema is built from, by the name of the variable that holds it; a
 * schema built from a named field set (`useSchema(USE_FIELDS)`) has that set's.
 */
function objectShapes(): Map<string, ts.ObjectLiteralExpression> {
  const shapes = new Map<string, ts.ObjectLiteralExpression>();
  const named = new Map<string, string>();
  for (const file of CONFIG_FILES) {
    const path = join(ROOT, CONFIG_FOLDER, file);
    const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
        const shape = firstObjectLiteral(node.initializer);
        if (shape) shapes.set(node.name.text, shape);
        else if (ts.isCallExpression(node.initializer) && node.initializer.arguments[0] && ts.isIdentifier(node.initializer.arguments[0]))
          named.set(node.name.text, node.initializer.arguments[0].text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  for (const [name, from] of named) {
    const shape = shapes.get(from);
    if (shape) shapes.set(name, shape);
  }
  return shapes;
}

/** The first object literal met depth first, callee before arguments: the shape of `z.object({…}).strict().refine(…)`. */
function firstObjectLiteral(node: ts.Node): ts.ObjectLiteralExpression | undefined {
  if (ts.isObjectLiteralExpression(node)) return node;
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) return undefined;
  return ts.forEachChild(node, firstObjectLiteral);
}

/** The identifier a chain of calls and property reads starts from: `LlmUseSettingsSchema` of `LlmUseSettingsSchema.prefault({})`. */
function leftmost(node: ts.Expression): string | undefined {
  if (ts.isIdentifier(node)) return node.text;
  if (ts.isCallExpression(node) || ts.isPropertyAccessExpression(node)) return leftmost(node.expression);
  return undefined;
}

/** The keys of an object schema, spreads of shared field sets included, in the order they are written. */
function keysOf(shape: ts.ObjectLiteralExpression, shapes: Map<string, ts.ObjectLiteralExpression>): KeyDoc[] {
  return shape.properties.flatMap((p): KeyDoc[] => {
    if (ts.isSpreadAssignment(p)) {
      const spread = ts.isIdentifier(p.expression) ? shapes.get(p.expression.text) : undefined;
      if (!spread) throw new Error(`${CONFIG_FOLDER}: a spread the configuration page cannot follow: ${p.getText()}`);
      return keysOf(spread, shapes);
    }
    if (!ts.isPropertyAssignment(p) || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) return [];
    const from = leftmost(p.initializer);
    const section = from && from.endsWith('Schema') && shapes.has(from) && from !== ROOT_SCHEMA ? from : undefined;
    const docs = ts.getJSDocCommentsAndTags(p).filter(ts.isJSDoc);
    const tag = (name: string) => docs.flatMap((d) => [...(d.tags ?? [])]).find((t) => t.tagName.text === name)?.comment;
    const tagText = (name: string) => {
      const comment = tag(name);
      return comment === undefined ? undefined : (ts.getTextOfJSDocComment(comment) ?? '').trim();
    };
    const text = docs
      .map((d) => ts.getTextOfJSDocComment(d.comment) ?? '')
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    return [{ name: p.name.text, text, defaultTag: tagText('default'), example: tagText('example'), section }];
  });
}

/** A table cell: one line, pipes escaped, and `<` outside code spans too, so `<data_dir>` is not read as HTML. */
function cell(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/\|/g, '\\|')
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith('`') ? part : part.replace(/</g, '&lt;')))
    .join('')
    .trim();
}

/**
 * The default a key has: what the schema fills in, as its `@default` comment words it (a note
 * in brackets kept); unset when the schema fills in nothing. A comment that names another value
 * than the schema's stops the page: the comment is what drifted.
 */
function defaultOf(key: KeyDoc, value: unknown, where: string): string {
  // A default worked out as the file loads (from the machine), described in brackets: told, not compared.
  if (key.defaultTag !== undefined && /^\(.*\)$/.test(key.defaultTag)) return key.defaultTag.slice(1, -1);
  if (key.defaultTag !== undefined && value !== undefined) {
    const stated = key.defaultTag.replace(/\s+\(.*\)$/, '');
    if (stated !== JSON.stringify(value))
      throw new Error(`${where}: the doc comment says @default ${key.defaultTag}, the schema fills in ${JSON.stringify(value)}`);
    return `\`${key.defaultTag}\``;
  }
  if (value === undefined) return key.defaultTag === undefined ? 'unset' : `\`${key.defaultTag}\``;
  return `\`${JSON.stringify(value)}\``;
}

const CONFIGURATION_PREFACE = `# Configuration

Every key of \`thymos.toml\`, section by section: its default and what it does. This page is
generated by \`npm run docs\` (scripts/docs-pages.ts) from the schema in \`shared/config/\` and the
doc comments on its keys; \`test/scripts/docs-pages.test.ts\` fails when it and the schema disagree. Every
key is optional; \`thymos.toml\` in this repository lists every key with its default.

\`[fleet] name\` (default \`thymos\`) names everything the fleet puts on NATS: subjects begin with it
(\`<name>.agent.<id>.control\`, \`<name>.events.<type>\`, \`<name>.supervisor.<op>\`, \`<name>.world.<op>\`,
\`<name>.embed\`) and streams take it upper-cased (\`<NAME>_EVENTS\`, \`<NAME>_INBOX\`), so two fleets
with different names can share one NATS server. The subjects shown in this manual are those of the
default name. It is a lower-case letter then up to 31 of \`a-z\`, \`0-9\`, \`_\`, \`-\`; \`connect()\`, the CLI,
the supervisor and every agent read it from the same \`thymos.toml\`. In code, \`new FleetNames(name)\`
(exported) spells every subject and stream of a fleet. Errors name the file, the line,
the key, what was expected and what came:

\`\`\`
thymos: CONFIG_INVALID: thymos.toml:5: agent.shutdown_timeout_ms: expected number, received string; got "soon"
\`\`\`

Unknown keys are errors too, so a typo never passes silently. \`thymos validate [--config FILE]
[--json]\` checks the file and the domain schema and lists what they define. Relative paths are
resolved against the folder of \`thymos.toml\`.
`;

/** docs/configuration.md */
export function configurationPage(): string {
  const shapes = objectShapes();
  const parsed = ThymosConfigSchema.safeParse({});
  if (!parsed.success) throw new Error(`the configuration schema refuses an empty thymos.toml: ${parsed.error.message}`);
  const defaults = parsed.data as unknown as Record<string, unknown>;
  const out: string[] = [CONFIGURATION_PREFACE];
  const table = (title: string, keys: KeyDoc[], values: Record<string, unknown>) => {
    if (keys.length === 0) return;
    out.push(`## ${title}`, '', '| key | default | what it does |', '| --- | --- | --- |');
    for (const key of keys) {
      const example = key.example ? ` Example: \`${key.example}\`.` : '';
      const value = defaultOf(key, values[key.name], `${title} ${key.name}`);
      out.push(`| \`${key.name}\` | ${cell(value)} | ${cell(key.text + example) || '—'} |`);
    }
    out.push('');
  };
  const section = (path: string, schema: string, values: Record<string, unknown>) => {
    const keys = keysOf(shapes.get(schema)!, shapes);
    table(
      `\`[${path}]\``,
      keys.filter((k) => !k.section),
      values,
    );
    for (const k of keys.filter((k) => k.section))
      section(`${path}.${k.name}`, k.section!, (values[k.name] ?? {}) as Record<string, unknown>);
  };
  const top = keysOf(shapes.get(ROOT_SCHEMA)!, shapes);
  table(
    'Top level',
    top.filter((k) => !k.section),
    defaults,
  );
  for (const k of top.filter((k) => k.section)) section(k.name, k.section!, (defaults[k.name] ?? {}) as Record<string, unknown>);
  return `${out.join('\n').trimEnd()}\n`;
}

/** docs/cli.md */
export function cliPage(): string {
  const out = [
    '# CLI',
    '',
    'Every `thymos` command, as `thymos help` and `thymos CMD --help` print them. This page is generated by',
    "`npm run docs` (scripts/docs-pages.ts) from the commands' help (`cli/command-book.ts`); `test/scripts/docs-pages.test.ts`",
    'fails when it and the help disagree. What the fleet commands print and their exit codes are in',
    '[states-and-reconcile.md](states-and-reconcile.md#run-a-fleet).',
    '',
    '```text',
    globalHelp(),
    '```',
    '',
  ];
  for (const spec of COMMANDS) out.push(`## thymos ${spec.name}`, '', '```text', commandHelp(spec), '```', '');
  return `${out.join('\n').trimEnd()}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const page of GENERATED_PAGES) {
    writeFileSync(join(ROOT, page.path), page.render());
    console.log(`wrote ${page.path}`);
  }
}
