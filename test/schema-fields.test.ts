import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

import ts from 'typescript';

import { REPO_ROOT } from './helpers/workspace.js';

/** Where `thymos.toml` and the Pkl domain are given their shape: every field of a `z.object({…})` there is a promise to a user. */
const SCHEMA_FILES = [
  'shared/config',
  'shared/domain/domain-schema.ts',
  'shared/domain/world-schema.ts',
  'shared/domain/tool-schema.ts',
  'shared/domain/queue-schema.ts',
];

/**
 * Fields no code reads by their declared name, each with why that is right (`file field`).
 * Anything else parsed and never read is a stub: the test names it.
 */
const NOT_READ_BY_NAME: Record<string, string> = {
  'shared/domain/domain-schema.ts agentTags':
    "read through a structural type, { agents, agentTags }, by shared/domain/event-filter.ts's appliesTo (event filters and world watches)",
  'shared/domain/domain-schema.ts description':
    "documentation in the Pkl domain for whoever writes concepts of the type; describe_concept shows the concept's own description",
  'shared/domain/domain-schema.ts skills':
    "an agent's, read through a structural type, { skills, queues }, by shared/domain/queue-schema.ts's queueSkills and queueProblems",
  'shared/domain/domain-schema.ts queues':
    "an agent's, read through a structural type, { skills, queues }, by shared/domain/queue-schema.ts's queueSkills and queueProblems (the domain's queues are read by name)",
  'shared/domain/world-schema.ts description':
    'sent whole to clients with the tables (world tables, `fleet.world.tables()`), for whoever reads the world',
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

const rel = (file: string) => relative(REPO_ROOT, file).replace(/\\/g, '/');
const isSchemaFile = (file: string) => SCHEMA_FILES.some((s) => rel(file) === s || rel(file).startsWith(`${s}/`));

/** `z.object({…})`, `z.strictObject({…})`, `x.extend({…})`: the object literal that gives fields. */
function isShape(node: ts.ObjectLiteralExpression): boolean {
  const call = node.parent;
  if (!ts.isCallExpression(call) || call.arguments[0] !== node) return false;
  const callee = call.expression;
  return ts.isPropertyAccessExpression(callee) && ['object', 'strictObject', 'looseObject', 'extend'].includes(callee.name.text);
}

test('every field of the thymos.toml and Pkl domain schemas is read by name somewhere, or says why not; every Pkl property has its field', () => {
  const files = ['agent', 'supervisor', 'client', 'cli', 'shared'].flatMap((d) => sources(join(REPO_ROOT, d)));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const fields = new Map<ts.Node, string>();
  for (const file of files.filter(isSchemaFile)) {
    const sf = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      if (ts.isObjectLiteralExpression(node) && isShape(node)) {
        for (const p of node.properties) {
          if (ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p))
            fields.set(p, `${rel(file)}:${sf.getLineAndCharacterOfPosition(p.getStart()).line + 1} ${p.name.getText()}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  assert.ok(fields.size > 150, `the schemas' fields are found (${fields.size})`);

  const read = new Set<ts.Node>();
  const mark = (symbol: ts.Symbol | undefined) => {
    for (const d of symbol?.declarations ?? []) if (fields.has(d)) read.add(d);
  };
  for (const file of files) {
    const sf = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAccessExpression(node)) mark(checker.getSymbolAtLocation(node.name));
      else if (ts.isElementAccessExpression(node)) {
        // obj['name'], or obj[use] with `use` a union of names (LlmUse): each name it can be is read.
        const key = checker.getTypeAtLocation(node.argumentExpression);
        const target = checker.getNonNullableType(checker.getTypeAtLocation(node.expression));
        for (const t of key.isUnion() ? key.types : [key]) if (t.isStringLiteral()) mark(target.getProperty(t.value));
      } else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
        const name = (node.propertyName ?? node.name).getText();
        mark(checker.getTypeAtLocation(node.parent).getProperty(name));
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  // Every property the Pkl base module declares reaches one of those fields, by name: nothing Pkl
  // accepts is dropped between the evaluation and the zod parse.
  const pkl = readFileSync(join(REPO_ROOT, 'schemas', 'Thymos.pkl'), 'utf8');
  const pklProperties = new Set([...pkl.matchAll(/^\s*(?:fixed\s+)?([a-z]\w*)\s*:/gm)].map((m) => m[1]!));
  assert.ok(pklProperties.size > 50, `the Pkl module's properties are found (${pklProperties.size})`);
  const domainFields = new Set([...fields.values()].filter((w) => !w.startsWith('shared/config/')).map((w) => w.split(' ')[1]!));
  assert.deepEqual(
    [...pklProperties].filter((p) => !domainFields.has(p)),
    [],
    'Pkl properties without a field in shared/domain',
  );

  const unread = [...fields].filter(([node]) => !read.has(node)).map(([, where]) => where);
  assert.deepEqual(
    unread.filter((w) => !(`${w.split(':')[0]} ${w.split(' ')[1]}` in NOT_READ_BY_NAME)),
    [],
  );
});
