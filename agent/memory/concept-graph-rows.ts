import type { RecordId } from 'surrealdb';

import type { ConceptRecord } from './memory-rows.js';

/** Everything the concept tracker keeps, as it is stored: concepts, aliases, mentions, relationships and causes. */
export interface ConceptGraph {
  concepts: ConceptRecord[];
  aliases: Array<{ text: string; concept: string; type: string; source: string }>;
  mentions: Array<{ memory: string; concept: string }>;
  relations: Array<{ from: string; to: string; type: string; properties: Record<string, unknown>; at: number }>;
  causes: Array<{ effect: string; cause: string; reason: string; at: number }>;
}

/** The rows `CONCEPT_GRAPH_QUERY` answers with, one list per statement. */
export type ConceptGraphRows = [
  Array<Omit<ConceptRecord, 'key' | 'attributes'> & { id: RecordId; attributes?: string }>,
  Array<{ text: string; concept: string; type: string; source: string }>,
  Array<{ in: RecordId; out: RecordId }>,
  Array<{ in: RecordId; out: RecordId; type: string; properties: string; at: number }>,
  Array<{ in: RecordId; out: RecordId; reason: string; at: number }>,
];

/** The whole concept graph in one request. */
export const CONCEPT_GRAPH_QUERY =
  'SELECT * FROM concept; SELECT text, concept, type, source FROM alias; SELECT in, out FROM mentions; SELECT in, out, type, properties, at FROM relates; SELECT in, out, reason, at FROM caused_by;';

/** The concept graph from its rows: record ids as keys, numbers as numbers, JSON text parsed. */
export function conceptGraphOf([concepts, aliases, mentions, relations, causes]: Partial<ConceptGraphRows>): ConceptGraph {
  return {
    concepts: (concepts ?? []).map(({ id, attributes, ...c }) => ({
      ...c,
      key: String(id.id),
      mentions: Number(c.mentions),
      significance: Number(c.significance),
      first_seen: Number(c.first_seen),
      last_seen: Number(c.last_seen),
      ...(typeof attributes === 'string' ? { attributes: JSON.parse(attributes) as Record<string, string | number | boolean> } : {}),
    })),
    aliases: aliases ?? [],
    mentions: (mentions ?? []).map((m) => ({ memory: String(m.in.id), concept: String(m.out.id) })),
    relations: (relations ?? []).map((r) => ({
      from: String(r.in.id),
      to: String(r.out.id),
      type: r.type,
      properties: JSON.parse(r.properties) as Record<string, unknown>,
      at: Number(r.at),
    })),
    causes: (causes ?? []).map((c) => ({ effect: String(c.in.id), cause: String(c.out.id), reason: c.reason, at: Number(c.at) })),
  };
}
