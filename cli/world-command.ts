import { connect, type Fleet } from '../client/fleet-client.js';
import type { WorldConditionInput, WorldTable, WorldTables } from '../shared/domain/index.js';
import { ErrorCode, ExitCode, ThymosError } from '../shared/errors/index.js';
import type { WorldQueryInput, WorldRow } from '../shared/protocol/index.js';
import { commandNamed, usageLine } from './command-book.js';
import { parseFleetArgs } from './fleet-args.js';
import { renderTable } from './table.js';

const SPEC = commandNamed('world')!;
const USAGE = `${usageLine(SPEC)}\n${SPEC.details}`;

const out = (text: string) => process.stdout.write(`${text}\n`);
const usage = (message: string) => new ThymosError(ErrorCode.USAGE, `${message}\nusage: ${USAGE}`);

/** `thymos world <tables|get|set|patch|delete|query> …`: the shared world store from the shell. */
export async function runWorldCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const arity: Record<string, number> = { tables: 0, get: 2, set: 3, patch: 3, delete: 2, query: 1 };
  if (sub === undefined || !Object.hasOwn(arity, sub))
    throw usage(`world: expected one of ${Object.keys(arity).join(', ')}, got ${JSON.stringify(sub ?? '')}`);
  const n = arity[sub]!;
  const args = parseFleetArgs(rest, SPEC, { min: n, max: n }, sub === 'query' ? ['where', 'order', 'limit'] : []);
  const [table, id, json] = args.positionals as [string, string, string];
  const fleet = await connect(args.config);
  try {
    switch (sub) {
      case 'tables': {
        const tables = await fleet.world.tables();
        out(args.json ? JSON.stringify(tables, null, 2) : renderTables(tables));
        return ExitCode.OK;
      }
      case 'get': {
        const row = await fleet.world.get(table, id);
        if (!row) throw new ThymosError(ErrorCode.NOT_FOUND, `${table} has no row ${JSON.stringify(id)}`);
        out(args.json ? JSON.stringify(row, null, 2) : renderRows([row], await declared(fleet, table)));
        return ExitCode.OK;
      }
      case 'set':
      case 'patch': {
        const fields = parseFields(json);
        const row = sub === 'set' ? await fleet.world.set(table, id, fields) : await fleet.world.patch(table, id, fields);
        out(args.json ? JSON.stringify(row) : `${sub === 'set' ? 'set' : 'patched'} ${table} ${row.id}`);
        return ExitCode.OK;
      }
      case 'delete': {
        const deleted = await fleet.world.delete(table, id);
        out(args.json ? JSON.stringify({ deleted }) : deleted ? `deleted ${table} ${id}` : `${table} had no row ${JSON.stringify(id)}`);
        return ExitCode.OK;
      }
      default: {
        const spec = await declared(fleet, table);
        const query: WorldQueryInput = {
          table,
          where: ((args.values.where as unknown as string[] | undefined) ?? []).map((w) => parseCondition(w, spec)),
        };
        if (typeof args.values.order === 'string') {
          const [field, direction = 'asc'] = args.values.order.split(':');
          if (direction !== 'asc' && direction !== 'desc')
            throw usage(`--order: expected FIELD or FIELD:asc or FIELD:desc, got ${JSON.stringify(args.values.order)}`);
          query.order_by = { field: field!, direction };
        }
        if (typeof args.values.limit === 'string') {
          const limit = Number(args.values.limit);
          if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
            throw usage(`--limit: expected 1 to 1000, got ${JSON.stringify(args.values.limit)}`);
          query.limit = limit;
        }
        const rows = await fleet.world.query(query);
        out(args.json ? JSON.stringify(rows, null, 2) : renderRows(rows, spec));
        return ExitCode.OK;
      }
    }
  } finally {
    await fleet.close();
  }
}

async function declared(fleet: Fleet, table: string): Promise<WorldTable> {
  const tables = await fleet.world.tables();
  const spec = Object.hasOwn(tables, table) ? tables[table] : undefined;
  if (!spec)
    throw new ThymosError(
      ErrorCode.INVALID_INPUT,
      `table: no world table ${JSON.stringify(table)}; the domain declares ${Object.keys(tables).join(', ') || 'none'}`,
    );
  return spec;
}

function parseFields(json: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    throw usage(`fields: expected a JSON object, got ${JSON.stringify(json.slice(0, 60))}: ${(e as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw usage('fields: expected a JSON object of field values');
  return parsed as Record<string, unknown>;
}

const OPS = ['>=', '<=', '!=', '=', '<', '>', '~'] as const;

/** `FIELD OP VALUE` (the value typed by the field's declaration) or a JSON condition. */
function parseCondition(text: string, table: WorldTable): WorldConditionInput {
  if (text.trimStart().startsWith('{')) {
    try {
      return JSON.parse(text) as WorldConditionInput;
    } catch (e) {
      throw usage(`--where: expected a JSON condition, got ${JSON.stringify(text.slice(0, 60))}: ${(e as Error).message}`);
    }
  }
  let at = -1;
  let op: (typeof OPS)[number] | undefined;
  for (const candidate of OPS) {
    const i = text.indexOf(candidate);
    if (i > 0 && (at < 0 || i < at || (i === at && candidate.length > op!.length))) {
      at = i;
      op = candidate;
    }
  }
  if (!op) throw usage(`--where: expected FIELD OP VALUE with OP one of ${OPS.join(' ')}, got ${JSON.stringify(text)}`);
  const field = text.slice(0, at).trim();
  const raw = text.slice(at + op.length).trim();
  const type = field === 'updated_at' ? 'number' : table.fields[field]?.type;
  let value: string | number | boolean = raw;
  if (type === 'number') {
    value = Number(raw);
    if (raw === '' || !Number.isFinite(value)) throw usage(`--where ${field}: expected a number, got ${JSON.stringify(raw)}`);
  } else if (type === 'boolean') {
    if (raw !== 'true' && raw !== 'false') throw usage(`--where ${field}: expected true or false, got ${JSON.stringify(raw)}`);
    value = raw === 'true';
  }
  return { field, op: op === '~' ? 'contains' : op, value };
}

function renderTables(tables: WorldTables): string {
  const rows = Object.entries(tables).flatMap(([name, t]) =>
    Object.entries(t.fields).map(([field, spec]) => [
      name,
      field,
      spec.type,
      spec.required ? 'yes' : '',
      spec.allowedValues?.join(', ') ?? '',
    ]),
  );
  return rows.length
    ? renderTable(['TABLE', 'FIELD', 'TYPE', 'REQUIRED', 'ALLOWED'], rows)
    : 'no world tables (declare worldTables in the Pkl schema)';
}

function renderRows(rows: WorldRow[], table: WorldTable): string {
  if (rows.length === 0) return 'no rows';
  const fields = Object.keys(table.fields);
  const cell = (v: unknown) => (v === undefined ? '' : Array.isArray(v) ? v.join(', ') : String(v));
  return renderTable(
    ['ID', ...fields.map((f) => f.toUpperCase()), 'UPDATED BY'],
    rows.map((r) => [r.id, ...fields.map((f) => cell(r[f])), r.updated_by]),
  );
}
