import { z } from 'zod';

import type { DomainSchema } from './domain-schema.js';

/** A text that names a concept: "the old badger" → elder_rowan (a person called Elder Rowan). */
export const AliasEntrySchema = z.object({
  alias: z.string().min(1),
  /** The concept's key: an agent id or the domain's target. */
  target: z.string().min(1),
  /** How the concept is called, e.g. "Elder Rowan". */
  name: z.string().min(1),
  type: z.string().min(1),
  /** Where it came from: the domain's alias patterns, or an agent's name and aliases. */
  source: z.enum(['domain', 'agent']),
});
export type AliasEntry = z.infer<typeof AliasEntrySchema>;

/**
 * Every alias the domain schema declares: its `aliasPatterns`, and each agent's id, persona
 * name and aliases (all naming that agent, a person).
 */
export function aliasTable(domain: DomainSchema): AliasEntry[] {
  const entries: AliasEntry[] = [];
  const names = new Map<string, string>();
  for (const [id, agent] of Object.entries(domain.agents)) {
    names.set(id, agent.persona.name);
    for (const alias of new Set([id, agent.persona.name, ...agent.aliases]))
      entries.push({ alias, target: id, name: agent.persona.name, type: 'person', source: 'agent' });
  }
  for (const p of domain.aliasPatterns)
    entries.push({ alias: p.pattern, target: p.target, name: names.get(p.target) ?? p.target, type: p.type, source: 'domain' });
  return entries;
}
