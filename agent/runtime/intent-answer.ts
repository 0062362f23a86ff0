import type { ToolCallRecord } from '../../shared/protocol/index.js';

/** One tool an intent may mean, with how well it fits (0..1) and why. */
export interface IntentCandidate {
  tool: string;
  score: number;
  why: string;
}

/**
 * How a resolution ended: `call` (confident and complete), `incomplete` (confident, but required
 * fields are missing), `ambiguous` (two tools fit nearly alike), `none` (nothing fits well),
 * `empty`, `too_long`, or `unsupported_language` (the offline resolver reads English: candidates, never a call); for a
 * `[TOOL: …]`, `echoed` (the words were in the line it answered: quoted, not its own).
 */
export const INTENT_OUTCOMES = ['call', 'incomplete', 'ambiguous', 'none', 'empty', 'too_long', 'unsupported_language', 'echoed'] as const;
export type IntentOutcome = (typeof INTENT_OUTCOMES)[number];

/** What `resolve_intent` answers. Nothing is executed to find it. */
export interface IntentAnswer {
  /** The call, when the best tool is trusted and its input is complete and valid. */
  call?: { tool: string; arguments: Record<string, unknown> };
  /** The tools it may mean, best first (at most 5), each with a score 0..1 and why. */
  candidates: IntentCandidate[];
  /** Required fields of the best tool the words do not give (when it is trusted). */
  missing: string[];
  /** 0..1: how sure the best candidate is the one meant. */
  confidence: number;
  outcome: IntentOutcome;
  /** The tool meant when the outcome is `incomplete`. */
  tool?: string;
  /** With `incomplete`: the values the words do give, each valid for its field; add those `missing` to call `tool`. */
  arguments?: Record<string, unknown>;
  /** What was found that does not fit (a value its field refuses), or why nothing was tried. */
  note?: string;
  /** `model` when the `[llm.extraction]` model chose (or refused) the tool; absent when the offline bars decided. `confidence` is the offline ranking's either way. */
  by?: 'model';
}

/** What `act` did: the resolution, and the call's record when it made one (or why the call could not be made). */
export interface ActOutcome {
  intent: string;
  answer: IntentAnswer;
  record?: ToolCallRecord;
  error?: { code: string; message: string };
}
