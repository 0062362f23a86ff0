import type { ConceptType, RelationshipType } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';

const invalid = (path: string, message: string, at = path) =>
  new ThymosError(ErrorCode.INVALID_INPUT, `${path}: ${message}`, { location: { path: at } });

/**
 * A relationship's properties checked against its declared type: declared, of the right type
 * and in range; missing ones take their defaults. Throws INVALID_INPUT naming the property.
 */
export function checkRelationship(
  types: Readonly<Record<string, RelationshipType>>,
  type: string,
  properties: Record<string, unknown>,
): { spec: RelationshipType; properties: Record<string, unknown> } {
  const spec = Object.hasOwn(types, type) ? types[type] : undefined;
  if (!spec) {
    const declared = Object.keys(types);
    throw invalid(
      'type',
      `no relationship type ${JSON.stringify(type)}; the domain declares ${declared.length ? declared.join(', ') : 'none'}${type === 'caused_by' ? '' : ' (caused_by links memories)'}`,
    );
  }
  const props: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(properties)) {
    const path = `properties.${name}`;
    const p = Object.hasOwn(spec.properties, name) ? spec.properties[name] : undefined;
    if (!p)
      throw invalid(
        path,
        `${type} has no property ${JSON.stringify(name)}; it declares ${Object.keys(spec.properties).join(', ') || 'none'}`,
      );
    if (typeof value !== p.type) throw invalid(path, `expected ${p.type}; got ${JSON.stringify(value)}`);
    if (typeof value === 'number' && ((p.min != null && value < p.min) || (p.max != null && value > p.max)))
      throw invalid(path, `expected ${p.min ?? '-∞'} to ${p.max ?? '∞'}; got ${value}`);
    props[name] = value;
  }
  for (const [name, p] of Object.entries(spec.properties)) if (!(name in props) && p.defaultValue != null) props[name] = p.defaultValue;
  return { spec, properties: props };
}

/**
 * A concept's attributes after a description, checked against the domain's concept types: a
 * declared type when the domain declares any; declared attributes of the right type and allowed
 * values; required ones present once merged with `known`. Throws INVALID_INPUT naming the field.
 */
export function checkDescription(
  conceptTypes: Readonly<Record<string, ConceptType>>,
  type: string,
  known: Readonly<Record<string, string | number | boolean>>,
  input: Record<string, unknown>,
): Record<string, string | number | boolean> {
  const declared = Object.keys(conceptTypes);
  const spec = Object.hasOwn(conceptTypes, type) ? conceptTypes[type] : undefined;
  if (!spec && declared.length > 0)
    throw invalid('type', `no concept type ${JSON.stringify(type)}; the domain declares ${declared.join(', ')}`);
  const attributes = { ...known };
  for (const [key, value] of Object.entries(input)) {
    const path = `attributes.${key}`;
    const a = spec && Object.hasOwn(spec.attributes, key) ? spec.attributes[key] : undefined;
    if (spec && !a)
      throw invalid(
        path,
        `${type} has no attribute ${JSON.stringify(key)}; it declares ${Object.keys(spec.attributes).join(', ') || 'none'}`,
      );
    const expected = a?.type ?? (typeof value === 'number' || typeof value === 'boolean' ? typeof value : 'string');
    if (typeof value !== expected) throw invalid(path, `expected ${expected}; got ${JSON.stringify(value)}`);
    if (a?.allowedValues && !a.allowedValues.includes(String(value)))
      throw invalid(path, `expected one of ${a.allowedValues.join(', ')}; got ${JSON.stringify(value)}`);
    attributes[key] = value as string | number | boolean;
  }
  const missing = Object.entries(spec?.attributes ?? {})
    .filter(([key, a]) => a.required && !(key in attributes))
    .map(([key]) => key);
  if (missing.length > 0) throw invalid('attributes', `${type} requires ${missing.join(', ')}`, `attributes.${missing[0]}`);
  return attributes;
}
