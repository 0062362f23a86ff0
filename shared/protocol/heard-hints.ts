import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { z } from 'zod';

import { ExtractedConceptSchema } from './concept-protocol.js';
import { decodeVectors, encodeVectors } from './embed-protocol.js';
import { parseJsonOrUndefined } from './parse-json.js';

/**
 * What the router already knows of an event's memory text when it copies the event to its
 * hearers: the concepts the fleet's concept service found in it and the vector the fleet's
 * embedding service made of it. Sent as headers of each copy, so that ten agents hearing one
 * event ask neither service anything.
 */
export interface HeardHints {
  concepts?: Array<z.infer<typeof ExtractedConceptSchema>>;
  vector?: { model: string; values: Float32Array };
}

export const HintHeaders = {
  concepts: 'Thymos-Concepts',
  vectorModel: 'Thymos-Vector-Model',
  vector: 'Thymos-Vector',
  /** "1" on a copy the router made while later events already waited to be copied: a burst is under way. */
  more: 'Thymos-More',
} as const;

/** Most concepts a hint carries; a text with more has its concepts asked for as usual. */
const CONCEPTS_MAX = 256;
/** Longest vector a hint carries (float32 values). */
const DIMS_MAX = 4096;

const ConceptsHintSchema = z.array(ExtractedConceptSchema).max(CONCEPTS_MAX);
const ModelSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

/** The headers that carry `hints` (and `more`: later events follow), or undefined when there is nothing to carry. */
export function hintHeaders(hints: HeardHints, more = false): MsgHdrs | undefined {
  const h = natsHeaders();
  let any = false;
  if (more) {
    h.set(HintHeaders.more, '1');
    any = true;
  }
  if (hints.concepts && ConceptsHintSchema.safeParse(hints.concepts).success) {
    // Header values are one line of ASCII: JSON escapes line breaks; the rest is escaped here.
    h.set(
      HintHeaders.concepts,
      JSON.stringify(hints.concepts).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    );
    any = true;
  }
  const vector = hints.vector;
  if (vector && vector.values.length > 0 && vector.values.length <= DIMS_MAX && ModelSchema.safeParse(vector.model).success) {
    h.set(HintHeaders.vectorModel, vector.model);
    h.set(HintHeaders.vector, encodeVectors([vector.values]));
    any = true;
  }
  return any ? h : undefined;
}

/** Whether the router had later events waiting when it made this copy (a hearer may wait a moment for them). */
export function moreFollows(headers: MsgHdrs | undefined): boolean {
  return headers?.get(HintHeaders.more) === '1';
}

/**
 * The hints a copy's headers carry. Headers are untrusted: a malformed concepts list or vector
 * is dropped (the agent then asks the services as it would without hints), never an error.
 */
export function readHints(headers: MsgHdrs | undefined): HeardHints {
  if (!headers) return {};
  const out: HeardHints = {};
  const concepts = ConceptsHintSchema.safeParse(parseJsonOrUndefined(headers.get(HintHeaders.concepts)));
  if (concepts.success) out.concepts = concepts.data;
  const model = ModelSchema.safeParse(headers.get(HintHeaders.vectorModel));
  const encoded = headers.get(HintHeaders.vector);
  if (model.success && /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) && encoded.length <= Math.ceil((DIMS_MAX * 4) / 3) + 4) {
    const bytes = Buffer.byteLength(encoded, 'base64');
    if (bytes > 0 && bytes % 4 === 0) {
      const values = decodeVectors(encoded, bytes / 4)[0];
      if (values && values.every(Number.isFinite)) out.vector = { model: model.data, values };
    }
  }
  return out;
}
