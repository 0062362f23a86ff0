import type { EventFilter } from './domain-schema.js';

/** Who is listening: what the domain schema's event filters are evaluated against. */
export interface Listener {
  id: string;
  name: string;
  tags: readonly string[];
  aliases: readonly string[];
  /** Where the agent is now (its home location unless told otherwise). */
  location?: string | null | undefined;
}

/** What of an event its filters look at (a world event has these and more). */
export interface HeardEvent {
  tags: readonly string[];
  location?: string | null | undefined;
  mentions: readonly string[];
}

const overlaps = (a: readonly string[], b: readonly string[]) => a.some((x) => b.includes(x));

/** Whether a declaration naming `agents` and `agentTags` (both empty: everyone) applies to an agent. */
export function appliesTo(
  target: { agents: readonly string[]; agentTags: readonly string[] },
  who: { id: string; tags: readonly string[] },
): boolean {
  if (target.agents.length > 0 && !target.agents.includes(who.id)) return false;
  if (target.agentTags.length > 0 && !overlaps(target.agentTags, who.tags)) return false;
  return true;
}

/**
 * Whether an agent hears an event: some filter of the domain schema applies to the agent
 * (its `agents` and `agentTags`, empty meaning all) and matches the event (any of its
 * `eventTags`, the agent's location when `sameLocation`, the agent named when `mentions`).
 * With no filters, agents hear nothing.
 */
export function hearsEvent(filters: readonly EventFilter[], who: Listener, e: HeardEvent): boolean {
  const names = [who.id, who.name, ...who.aliases].map((n) => n.toLowerCase());
  return filters.some((f) => {
    if (!appliesTo(f, who)) return false;
    if (f.eventTags.length > 0 && !overlaps(f.eventTags, e.tags)) return false;
    if (f.sameLocation && (!who.location || e.location !== who.location)) return false;
    if (f.mentions && !e.mentions.some((m) => names.includes(m.toLowerCase()))) return false;
    return true;
  });
}
