import { z } from 'zod';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { preview } from '../errors/zod-issues.js';

/** Table and field names of the world store: lower-case identifiers, at most 48 characters. */
export const WorldNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,47}$/, 'expected a world name: a lower-case letter, then lower-case letters, digits or _ (at most 48)');

/** Tables the world database keeps for Thymos itself; a domain cannot declare them. */
export const RESERVED_WORLD_TABLES = Object.freeze(['agent', 'transition', 'live_subscription', 'approval']);
/** Fields every world row carries: its id and who last wrote it, when. */
export const RESERVED_WORLD_FIELDS = Object.freeze(['id', 'updated_at', 'updated_by']);

export const WorldFieldSchema = z.object({
  /** `strings` is a list of strings (e.g. the members of a party). */
  type: z.enum(['string', 'number', 'boolean', 'strings']).default('string'),
  required: z.boolean().default(false),
  /** When set, a string (or every element of `strings`) must be one of these. */
  allowedValues: z.array(z.string()).nullish(),
});

export const WorldTableSchema = z.object({
  description: z.string().default(''),
  fields: z.record(WorldNameSchema, WorldFieldSchema).default({}),
});
export type WorldTable = z.infer<typeof WorldTableSchema>;
export type WorldTables = Readonly<Record<string, WorldTable>>;

const WorldScalarSchema = z.union([z.string().max(10_000), z.number(), z.boolean()]);
export type WorldScalar = z.infer<typeof WorldScalarSchema>;

export const WORLD_OPS = ['=', '!=', '<', '<=', '>', '>=', 'contains', 'in'] as const;
export type WorldOp = (typeof WORLD_OPS)[number];

/**
 * One test of a structured world query: `field op value`. `in` takes a list of values;
 * `contains` tests a `strings` field for an element, or a string field for a substring.
 * Values are bound as query parameters, never spliced into SurrealQL.
 */
export const WorldConditionSchema = z
  .object({
    field: z.string().min(1).max(64),
    op: z.enum(WORLD_OPS).default('='),
    value: z.union([WorldScalarSchema, z.array(WorldScalarSchema).max(1000)]),
  })
  .strict();
export type WorldCondition = z.infer<typeof WorldConditionSchema>;
export type WorldConditionInput = z.input<typeof WorldConditionSchema>;

/** Which rows of one table: every condition holds (AND). */
export const WorldFilterSchema = z
  .object({
    table: z.string().min(1).max(64),
    where: z.array(WorldConditionSchema).max(32).default([]),
  })
  .strict();
export type WorldFilter = z.infer<typeof WorldFilterSchema>;
export type WorldFilterInput = z.input<typeof WorldFilterSchema>;

/** A world row's id: any non-empty text without control characters, at most 200 characters. */
export const WorldRowIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^\P{Cc}+$/u, 'expected a row id without control characters');

/**
 * Checks a filter against the declared tables: the table exists, every field is declared
 * (or is `id`), and every value has the field's type. Errors name `where`'s path and what
 * the table declares; `at` prefixes the path (e.g. `worldWatches.0`).
 */
export function checkWorldFilter(tables: WorldTables, filter: WorldFilter, at = ''): WorldTable {
  const table = requireWorldTable(tables, filter.table, at);
  filter.where.forEach((c, i) => {
    const where = `${at}where.${i}`;
    if (c.field === 'id') {
      if (c.op !== '=' && c.op !== '!=' && c.op !== 'in') throw invalid(`${where}.op`, `id supports =, != and in; got ${c.op}`);
      checkValues(c, (v) => typeof v === 'string', 'row id text', where);
      return;
    }
    if (c.field === 'updated_at') {
      checkValues(c, (v) => typeof v === 'number', 'a time in ms since the epoch', where);
      return;
    }
    if (c.field === 'updated_by') {
      checkValues(c, (v) => typeof v === 'string', 'text', where);
      return;
    }
    const spec = table.fields[c.field];
    if (!spec) {
      throw invalid(`${where}.field`, `table ${filter.table} has no field ${preview(c.field)}; it declares ${listFields(table)}`);
    }
    const ordered = c.op === '<' || c.op === '<=' || c.op === '>' || c.op === '>=';
    if (ordered && spec.type !== 'number' && spec.type !== 'string')
      throw invalid(`${where}.op`, `${c.op} needs a number or string field; ${c.field} is ${spec.type}`);
    if (spec.type === 'strings' && c.op !== 'contains') throw invalid(`${where}.op`, `${c.field} is a list of strings: use contains`);
    const element = spec.type === 'strings' ? 'string' : spec.type;
    checkValues(c, (v) => typeof v === element, element, where);
  });
  return table;
}

/** The declared table `name`, or INVALID_INPUT naming the declared ones. */
export function requireWorldTable(tables: WorldTables, name: string, at = ''): WorldTable {
  const table = Object.hasOwn(tables, name) ? tables[name] : undefined;
  if (!table) {
    const names = Object.keys(tables);
    throw invalid(
      `${at}table`,
      `no world table ${preview(name)}; the domain declares ${names.length ? names.join(', ') : 'none (add worldTables to the Pkl schema)'}`,
    );
  }
  return table;
}

function checkValues(c: WorldCondition, ok: (v: WorldScalar) => boolean, expected: string, where: string): void {
  if (c.op === 'in') {
    if (!Array.isArray(c.value)) throw invalid(`${where}.value`, `in needs a list of ${expected} values; got ${preview(c.value)}`);
    c.value.forEach((v, j) => {
      if (!ok(v)) throw invalid(`${where}.value.${j}`, `expected ${expected}; got ${preview(v)}`);
    });
    return;
  }
  if (Array.isArray(c.value)) throw invalid(`${where}.value`, `${c.op} needs one value (only in takes a list); got ${preview(c.value)}`);
  if (!ok(c.value)) throw invalid(`${where}.value`, `expected ${expected}; got ${preview(c.value)}`);
}

function listFields(table: WorldTable): string {
  return ['id', ...Object.keys(table.fields), 'updated_at', 'updated_by'].join(', ');
}

function invalid(path: string, message: string): ThymosError {
  return new ThymosError(ErrorCode.INVALID_INPUT, `${path}: ${message}`, { location: { path } });
}

/**
 * A zod schema for the fields of a row of `table`: declared fields only, with their types
 * and allowed values; `partial` for a patch. Unknown keys are refused by name.
 */
export function worldRowFieldsSchema(table: WorldTable, partial = false): z.ZodType<Record<string, unknown>> {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(table.fields)) {
    let s: z.ZodType;
    const text = spec.allowedValues?.length ? z.enum(spec.allowedValues as [string, ...string[]]) : z.string().max(100_000);
    if (spec.type === 'string') s = text;
    else if (spec.type === 'number') s = z.number();
    else if (spec.type === 'boolean') s = z.boolean();
    else s = z.array(text).max(10_000);
    shape[name] = spec.required && !partial ? s : s.optional();
  }
  return z.object(shape).strict() as unknown as z.ZodType<Record<string, unknown>>;
}
