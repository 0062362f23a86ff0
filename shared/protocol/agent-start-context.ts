import { z } from 'zod';

import { AliasEntrySchema } from '../domain/alias-table.js';
import {
  AgentDefinitionSchema,
  ConceptTypeSchema,
  RelationshipTypeSchema,
  SearchStrategySchema,
  WorldWatchSchema,
} from '../domain/domain-schema.js';
import { QueueNameSchema, QueueSchema } from '../domain/queue-schema.js';
import { ToolsSchema } from '../domain/tool-schema.js';

/**
 * What a supervisor (or a user) may hand an agent at start in `--context FILE`:
 * its definition (so the agent need not evaluate Pkl) and its context properties.
 */
export const AgentStartContextSchema = z
  .object({
    definition: AgentDefinitionSchema.optional(),
    /** The domain's relationship types (what `link` may relate concepts with). */
    relationshipTypes: z.record(z.string(), RelationshipTypeSchema).optional(),
    conceptTypes: z.record(z.string(), ConceptTypeSchema).optional(),
    searchStrategies: z.record(z.string(), SearchStrategySchema).optional(),
    /** Every alias of the domain (alias patterns, agents' names and aliases), for concepts and recall. */
    aliases: z.array(AliasEntrySchema).optional(),
    /** The domain schema's world watches (standing live queries on world tables). */
    worldWatches: z.array(WorldWatchSchema).optional(),
    /** The tools its capabilities grant, by name (Script paths absolute; secrets only named, never their values). */
    tools: ToolsSchema.optional(),
    /** The work queues it serves, with their settings (it takes their jobs of its skills). */
    queues: z.record(QueueNameSchema, QueueSchema).optional(),
    /**
     * The fencing token of the ownership claim its supervisor started it under: the agent names it in
     * every status notice, so the supervisor takes the notices of this start and not an older copy's.
     */
    ownershipToken: z.number().int().positive().optional(),
    /**
     * With placement by lease (`[cluster] enabled`): when (ms since the epoch, on this host's clock)
     * the agent stops itself unless its supervisor has extended its lease since
     * (`<fleet>.agent.<id>.lease`). Comes with `ownershipToken`; already past, the agent does not start.
     */
    fenceAt: z.number().int().positive().optional(),
    properties: z.record(z.string(), z.unknown()).default({}),
  })
  .strict()
  .refine((c) => c.fenceAt === undefined || c.ownershipToken !== undefined, {
    message: 'fenceAt comes with ownershipToken: a lease is extended for the claim it was given under',
    path: ['fenceAt'],
  });
export type AgentStartContext = z.infer<typeof AgentStartContextSchema>;
export type AgentStartContextInput = z.input<typeof AgentStartContextSchema>;

/**
 * A supervisor's extension of one agent's lease, on `<fleet>.agent.<id>.lease`: the agent stops
 * itself at `fence_at` (ms since the epoch, this host's clock) from then on, when `token` is the claim
 * it runs under, or `previous` is and `token` the claim that took that one over on the same host (a
 * supervisor restarted adopts the agents its earlier run started): it runs under `token` from then
 * on. An extension for another claim (an older or another start) changes nothing.
 */
export const LeaseExtensionSchema = z
  .object({
    token: z.number().int().positive(),
    fence_at: z.number().int().positive(),
    previous: z.number().int().positive().optional(),
  })
  .strict();
export type LeaseExtension = z.infer<typeof LeaseExtensionSchema>;
