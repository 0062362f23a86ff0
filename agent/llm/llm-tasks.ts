import { z } from 'zod';

import type { ScoredOption } from './llm-provider.js';

/** What a reply in a conversation is: said, how, what the agent does, and what it learned. */
export const DialogueReplySchema = z.object({
  message: z.string().min(1),
  emotional_tone: z.string().min(1).default('neutral'),
  actions: z.array(z.string()).default([]),
  state_changes: z.record(z.string(), z.unknown()).default({}),
  /** Facts the speaker told that are worth remembering, in the agent's words; each becomes a memory. */
  learned: z.array(z.string().min(1)).default([]),
});
export type DialogueReply = z.infer<typeof DialogueReplySchema>;

/** What `think` answers: its steps and each option scored (the options are checked per call). */
export interface ThoughtAnswer {
  steps: string[];
  options: ScoredOption[];
}

/** What `decide` answers. */
export interface DecisionAnswer {
  action: string;
  confidence: number;
  reason: string;
}

/** A consolidation insight put in a sentence. */
export const SummarySchema = z.object({ insight: z.string().min(1) });

/** How each task's JSON answer looks, for the prompt. */
export const ANSWER_SHAPES = {
  dialogue:
    'Answer with one JSON object: {"message": what you say, "emotional_tone": one word, "actions": [things you do], "state_changes": {}, "learned": [facts the speaker told you worth remembering, in your words]}.',
  think:
    'Answer with one JSON object: {"steps": [your reasoning, step by step], "options": [{"action": one of the options, "score": 0..1 how well it fits, "reason": why}]}.',
  decide: 'Answer with one JSON object: {"action": the option you choose, "confidence": 0..1, "reason": why}.',
  summarize: 'Answer with one JSON object: {"insight": one sentence that says what the memories have in common}.',
  work: 'Once you have acted, answer with one JSON object: {"status": "done" when the job is done, "retry" when it could not be done now but may be later, "give_up" when it cannot or must not be done, "summary": what you did, or why not}.',
} as const;
