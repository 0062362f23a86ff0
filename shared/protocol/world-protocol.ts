import { z } from 'zod';

import { WorldFilterSchema, WorldRowIdSchema, WorldTableSchema } from '../domain/world-schema.js';

/** Who wrote a row: `app` (the game loop, the CLI) or an agent id. */
const WriterSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_:-]{0,63}$/, 'expected a writer name: app or an agent id')
  .default('app');
const RowFieldsSchema = z.record(z.string(), z.unknown());

/** A structured query of one world table: conditions (AND), an optional order, a limit. */
export const WorldQuerySchema = WorldFilterSchema.extend({
  order_by: z
    .object({ field: z.string().min(1).max(64), direction: z.enum(['asc', 'desc']).default('asc') })
    .strict()
    .optional(),
  limit: z.number().int().min(1).max(1000).default(100),
}).strict();
export type WorldQuery = z.infer<typeof WorldQuerySchema>;
export type WorldQueryInput = z.input<typeof WorldQuerySchema>;

/** Requests to `<fleet>.world.<op>`, answered by the supervisor. */
/**
 * An agent's write under placement by lease names the claim it runs under; the store refuses one
 * under any claim but the current one (NOT_OWNER), so a copy of the agent left behind by a lost
 * lease changes nothing of the world.
 */
const ClaimTokenSchema = z.number().int().positive().optional();

export const WorldRequestSchemas = {
  tables: z.object({}).strict(),
  get: z.object({ table: z.string().min(1).max(64), id: WorldRowIdSchema }).strict(),
  /** Writes the whole row (creating it): declared fields only, required ones present. */
  set: z
    .object({ table: z.string().min(1).max(64), id: WorldRowIdSchema, fields: RowFieldsSchema, by: WriterSchema, token: ClaimTokenSchema })
    .strict(),
  /** Changes some fields of an existing row. */
  patch: z
    .object({ table: z.string().min(1).max(64), id: WorldRowIdSchema, fields: RowFieldsSchema, by: WriterSchema, token: ClaimTokenSchema })
    .strict(),
  delete: z.object({ table: z.string().min(1).max(64), id: WorldRowIdSchema, token: ClaimTokenSchema }).strict(),
  query: WorldQuerySchema,
  /**
   * Starts a live query relayed on `<fleet>.world.live.<sub>`. `owner` is an agent id (the
   * subscription ends when that agent stops) or any other name; `key` makes it idempotent:
   * the same owner and key get the same subscription back, with the new filter.
   */
  subscribe: WorldFilterSchema.extend({
    owner: z.string().regex(/^[a-z][a-z0-9_:-]{0,63}$/, 'expected an owner name: an agent id or another lower-case name'),
    key: z.string().min(1).max(128).optional(),
  }).strict(),
  /** Keeps subscriptions alive; the reply lists those that no longer exist. */
  renew: z.object({ subs: z.array(z.string().uuid()).max(10_000) }).strict(),
  unsubscribe: z.object({ sub: z.string().uuid() }).strict(),
} as const;
export type WorldOp = keyof typeof WorldRequestSchemas;

/** A row as the world store returns it: its declared fields and who changed it when. */
export const WorldRowSchema = z.looseObject({ id: z.string(), updated_at: z.number(), updated_by: z.string() });
export type WorldRow = { id: string; updated_at: number; updated_by: string } & Record<string, unknown>;

export const WorldSubscriptionSchema = z.object({
  sub: z.string().uuid(),
  subject: z.string(),
  /** Renew within this many ms or the subscription ends. */
  lease_ms: z.number().int(),
});
export type WorldSubscriptionInfo = z.infer<typeof WorldSubscriptionSchema>;

/** One notification of a live query, published on `<fleet>.world.live.<sub>`. */
export const WorldChangeSchema = z.object({
  sub: z.string().uuid(),
  action: z.enum(['create', 'update', 'delete']),
  table: z.string(),
  id: z.string(),
  /** The row after the change (before it, for a delete). */
  row: z.record(z.string(), z.unknown()),
  /** When the supervisor relayed it, ms since the epoch. */
  at: z.number(),
});
export type WorldChange = z.infer<typeof WorldChangeSchema>;

/** What each world op answers with: the `result` of `{ ok: true, result }`. The requester validates every reply with these. */
export const WorldResultSchemas = {
  tables: z.record(z.string(), WorldTableSchema),
  get: WorldRowSchema.nullable(),
  set: WorldRowSchema,
  patch: WorldRowSchema,
  delete: z.object({ deleted: z.boolean() }),
  query: z.array(WorldRowSchema),
  subscribe: WorldSubscriptionSchema,
  renew: z.object({ unknown: z.array(z.string()) }),
  unsubscribe: z.object({ ended: z.boolean() }),
} as const satisfies Record<WorldOp, z.ZodType>;
