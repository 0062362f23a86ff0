import { z } from 'zod';

import { AgentIdSchema } from '../domain/domain-schema.js';
import { AgentModeSchema } from './agent-protocol.js';

/**
 * The supervisor's claim of a warm spare: become this agent, on this port, in this mode,
 * with the start context in this file. The spare answers once the agent is ready.
 */
export const SpareClaimSchema = z
  .object({
    agentId: AgentIdSchema,
    port: z.number().int().min(1).max(65_535),
    mode: AgentModeSchema,
    context: z.string().min(1),
  })
  .strict();
export type SpareClaim = z.infer<typeof SpareClaimSchema>;

/** A spare's answer to a claim: the agent is ready, in the spare's process. */
export const SpareClaimOkSchema = z.object({ pid: z.number().int().positive() });
