import { createHash, randomUUID } from 'node:crypto';

import { z } from 'zod';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { parseInput } from '../errors/zod-issues.js';

/** Dot-separated tokens of lower-case letters, digits, `_` and `-`: `tavern.brawl`. */
const EventTypeSchema = z
  .string()
  .regex(/^[a-z0-9_-]{1,64}(\.[a-z0-9_-]{1,64}){0,7}$/, 'an event type: dot-separated tokens of a-z, 0-9, _ or -, e.g. "tavern.brawl"');

/** What a game loop or job system publishes; `id` and `ts` are filled in when left out. */
export const WorldEventInputSchema = z
  .object({
    /** Unique per event; a republished id is dropped by the stream (duplicate window). */
    id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ or -, at most 64')
      .optional(),
    type: EventTypeSchema,
    /** ISO 8601 time the event happened. */
    ts: z.iso.datetime({ offset: true }).optional(),
    /** Who or what caused it, e.g. "game", "player", an agent id. */
    source: z.string().min(1).max(128).default('game'),
    tags: z.array(z.string().min(1).max(64)).max(32).default([]),
    location: z.string().min(1).max(128).optional(),
    /** Agent ids or names the event is about. */
    mentions: z.array(z.string().min(1).max(128)).max(64).default([]),
    /** What happened. `summary` (a sentence) becomes the memory text when present. */
    payload: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export type WorldEventInput = z.input<typeof WorldEventInputSchema>;

export const WorldEventSchema = WorldEventInputSchema.extend({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  ts: z.iso.datetime({ offset: true }),
});
export type WorldEvent = z.infer<typeof WorldEventSchema>;

/** Validates an event at the edge and fills in its id and time. Errors say which field and what came. */
export function parseWorldEvent(raw: unknown, where = 'event'): WorldEvent {
  const e = parseInput(WorldEventInputSchema, raw, where);
  return Object.freeze({ ...e, id: e.id ?? randomUUID(), ts: e.ts ?? new Date().toISOString() });
}

/**
 * An event agent `agent` publishes: its source is the agent (the router drops one whose source
 * is not the agent whose subject it came on); another source is refused here, UNAUTHORIZED at
 * `source`, rather than sent to be dropped. An id it gives is made its own (`agentEventId`), so
 * it cannot take an id the game will use, nor another agent's.
 */
export function parseAgentEvent(raw: WorldEventInput, agent: string, where = 'event'): WorldEvent {
  if (raw.source !== undefined && raw.source !== agent) {
    throw new ThymosError(
      ErrorCode.UNAUTHORIZED,
      `${where}.source: an agent publishes events as itself ("${agent}"), not as ${JSON.stringify(raw.source).slice(0, 80)}`,
      { location: { path: 'source' } },
    );
  }
  const event = parseWorldEvent({ ...raw, source: agent }, where);
  return raw.id === undefined ? event : Object.freeze({ ...event, id: agentEventId(agent, event.id) });
}

/**
 * The id of an event agent `agent` gave id `id`: `<agent>-<id>` (agent ids have no `-`, so no
 * other agent's, nor one the game chose without that prefix), or, past 64 characters, `<agent>-`
 * and a hash of `id`. The same for the same id, so an event published twice is still kept once
 * (the stream's duplicate window) and remembered once (its memory id is its id).
 */
export function agentEventId(agent: string, id: string): string {
  const own = `${agent}-${id}`;
  return own.length <= 64
    ? own
    : `${agent}-${createHash('sha256')
        .update(id)
        .digest('hex')
        .slice(0, 63 - agent.length)}`;
}

/** The sentence an agent remembers for an event. */
export function eventMemoryText(e: WorldEvent): string {
  const summary = typeof e.payload.summary === 'string' ? e.payload.summary : undefined;
  const where = e.location ? ` at ${e.location}` : '';
  return summary ? `${summary} (${e.type}${where})` : `${e.type}${where}: ${JSON.stringify(e.payload)}`;
}
