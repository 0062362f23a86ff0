import { z } from 'zod';

/**
 * What the runtime keeps across restarts in its snapshots. Each part is read on its own:
 * a part a snapshot holds in another shape (a hand edit, say) is left out
 * and starts afresh, and the rest is still restored.
 */
export const SavedStateSchema = z.object({
  conversations: z.number().int().min(0).optional().catch(undefined),
  llm: z
    .object({
      calls: z.number(),
      input_tokens: z.number().optional(),
      output_tokens: z.number().optional(),
      cost: z.number().optional(),
      prose_replies: z.number().optional(),
      invalid_tool_calls: z.number().optional(),
    })
    .optional()
    .catch(undefined),
  disposition: z.record(z.string(), z.unknown()).optional().catch(undefined),
});

export type SavedState = z.infer<typeof SavedStateSchema>;

/** The saved state of a snapshot, whatever it holds (nothing usable gives `{}`). */
export function readSavedState(raw: unknown): SavedState {
  const parsed = SavedStateSchema.safeParse(raw);
  if (!parsed.success) return {};
  return Object.fromEntries(Object.entries(parsed.data).filter(([, value]) => value !== undefined));
}
