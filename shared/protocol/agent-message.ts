import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import { AgentIdSchema } from '../domain/domain-schema.js';

/** A message from one agent to another: told, asked (answer wanted), or an answer. */
export const AgentMessageSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/),
    from: AgentIdSchema,
    to: AgentIdSchema,
    kind: z.enum(['tell', 'ask', 'answer']),
    text: z.string().min(1).max(8000),
    ts: z.iso.datetime({ offset: true }),
    /** For an answer: the id of the question. */
    in_reply_to: z.string().optional(),
  })
  .strict();
export type AgentMessage = z.infer<typeof AgentMessageSchema>;

/** A running agent's live answer to a question (`<fleet>.agent.<id>.ask`); a refusal is a coded error. */
export const AskReplySchema = z.object({ ok: z.literal(true), answer: AgentMessageSchema.extend({ kind: z.literal('answer') }) });

export function newMessage(fields: Omit<AgentMessage, 'id' | 'ts'> & { id?: string }): AgentMessage {
  return { ...fields, id: fields.id ?? randomUUID(), ts: new Date().toISOString() };
}
