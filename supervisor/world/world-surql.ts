import { and, contains, eq, type Expr, gt, gte, inside, lt, lte, ne, RecordId } from 'surrealdb';

import type { WorldCondition, WorldFilter, WorldTable } from '../../shared/domain/index.js';
import type { WorldRow } from '../../shared/protocol/index.js';

const FIELD_TYPES: Record<WorldTable['fields'][string]['type'], string> = {
  string: 'string',
  number: 'number',
  boolean: 'bool',
  strings: 'array<string>',
};

/** `DEFINE` statements of one declared table; OVERWRITE so a changed declaration takes effect. */
export function tableDefinition(name: string, table: WorldTable): string {
  const fields = Object.entries(table.fields).map(([field, spec]) => {
    const type = FIELD_TYPES[spec.type];
    return `DEFINE FIELD OVERWRITE \`${field}\` ON \`${name}\` TYPE ${spec.required ? type : `option<${type}>`};\n`;
  });
  return [
    `DEFINE TABLE OVERWRITE \`${name}\` SCHEMAFULL;\n`,
    ...fields,
    `DEFINE FIELD OVERWRITE updated_at ON \`${name}\` TYPE int;\n`,
    `DEFINE FIELD OVERWRITE updated_by ON \`${name}\` TYPE string;\n`,
  ].join('');
}

/** The conditions of a filter as one SDK expression; every value becomes a bound parameter. */
export function conditionOf(filter: WorldFilter): Expr | undefined {
  if (filter.where.length === 0) return undefined;
  return and(...filter.where.map((c) => conditionExpr(filter.table, c)));
}

function conditionExpr(table: string, c: WorldCondition): Expr {
  const value =
    c.field === 'id'
      ? Array.isArray(c.value)
        ? c.value.map((v) => new RecordId(table, String(v)))
        : new RecordId(table, String(c.value))
      : c.value;
  switch (c.op) {
    case '=':
      return eq(c.field, value);
    case '!=':
      return ne(c.field, value);
    case '<':
      return lt(c.field, value);
    case '<=':
      return lte(c.field, value);
    case '>':
      return gt(c.field, value);
    case '>=':
      return gte(c.field, value);
    case 'contains':
      return contains(c.field, value);
    case 'in':
      return inside(c.field, value);
  }
}

/** A stored row as the API returns it: its id as text, declared fields, and provenance. */
export function toWorldRow(row: Record<string, unknown>, table: WorldTable): WorldRow {
  const rid = row.id;
  const out: WorldRow = {
    id: rid instanceof RecordId ? String(rid.id) : String(rid),
    updated_at: Number(row.updated_at ?? 0),
    updated_by: String(row.updated_by ?? ''),
  };
  for (const field of Object.keys(table.fields)) {
    if (row[field] !== undefined) out[field] = row[field];
  }
  return out;
}
