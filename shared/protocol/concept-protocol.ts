import { z } from 'zod';

/** Most texts in one request to `<fleet>.concepts`. */
export const CONCEPT_TEXTS_MAX = 1024;

/** A request to `<fleet>.concepts`: texts whose people, places and organisations to find. */
export const ConceptRequestSchema = z
  .object({
    texts: z.array(z.string().max(100_000)).min(1).max(CONCEPT_TEXTS_MAX),
  })
  .strict();

/** Most other names a text gives one concept. */
export const CONCEPT_ALIASES_MAX = 8;

/** One concept found in a text, with the other names the text gives it ("Rowan, whom they call the old badger"). */
export const ExtractedConceptSchema = z.object({
  name: z.string().min(1).max(1000),
  type: z.string().min(1).max(100),
  aliases: z.array(z.string().min(2).max(200)).max(CONCEPT_ALIASES_MAX).optional(),
});

/** The fields of a successful reply on `<fleet>.concepts`: one list of concepts per text, in order. */
export const ConceptOkSchema = z.object({ result: z.object({ concepts: z.array(z.array(ExtractedConceptSchema)) }) });
