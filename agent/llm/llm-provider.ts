import { type z } from 'zod';

import type { Persona } from '../../shared/domain/domain-schema.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { describeIssues } from '../../shared/errors/zod-issues.js';


export interface LlmMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface GenerateRequest {
  messages: readonly LlmMessage[];
  /** 0..2. Unset: the provider's configured temperature. */
  temperature?: number | undefined;
  /** Unset: the provider's configured max tokens. */
  maxTokens?: number | undefined;
  /** Ask for a JSON object (the provider's JSON mode, where it has one). */
  json?: boolean | undefined;
  /** Aborting it cancels the call at once and stops spending: the request is closed. */
  signal?: AbortSignal | undefined;
  /**
   * The facts the messages were written from. A model reads the messages; the offline
   * provider, which has no model, composes its answer from these.
   */
  brief?: PromptBrief | undefined;
}

/** A memory as a prompt shows it: what it says and how strong it is (0..1). */
export interface BriefMemory {
  content: string;
  strength: number;
  /** Where it came from (`told`, `dialogue`, `event`, `insight`, …), when known. */
  kind?: string;
}

/** An option of a decision with how well it fits (0..1) and why. */
export interface ScoredOption {
  action: string;
  score: number;
  reason: string;
}

/** What a prompt was built from, by task. */
export type PromptBrief =
  | { task: 'dialogue'; persona: Persona; speaker: string; message: string; memories: BriefMemory[] }
  | { task: 'think'; persona: Persona; situation: string; memories: BriefMemory[]; options: string[] }
  | { task: 'decide'; persona: Persona; situation: string; options: ScoredOption[] }
  | { task: 'summarize'; sources: string[]; draft: string };

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface GenerateResult {
  text: string;
  model: string;
  /** `stop`, `length`, … as the provider says. */
  finish_reason: string;
  usage: TokenUsage;
  /** How many calls to the model this result adds up (repairs included). @default 1 */
  calls?: number;
  /** The structured fields could not be had and the model's prose was used as it was. */
  prose?: boolean;
}

export interface LlmCapabilities {
  streaming: boolean;
  json: boolean;
}

/** A model that writes text: an HTTP endpoint, the MCP client's model, or none at all. */
export interface LlmProvider {
  readonly kind: string;
  readonly capabilities: LlmCapabilities;
  /** What it runs, for state and metrics. */
  info(): { provider: string; model: string };
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** Like generate, calling `onText` with each piece as it arrives. */
  stream(request: GenerateRequest, onText: (piece: string) => void): Promise<GenerateResult>;
}

/** The first JSON object in a text: models wrap JSON in prose or code fences now and then. */
function jsonIn(text: string): unknown {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end < start) throw new Error('no JSON object in the output');
  return JSON.parse(text.slice(start, end + 1));
}

/**
 * Output that must match `schema`: asked in JSON mode, parsed and validated; when it does not
 * validate, the model is shown its output and what was wrong, and asked again (`repairs`
 * times, default 1). Usage adds up over the attempts. LLM_OUTPUT_INVALID when none validates.
 */
export async function generateStructured<T>(
  provider: LlmProvider,
  request: GenerateRequest,
  schema: z.ZodType<T>,
  options: {
    repairs?: number;
    /** What to make of the model's last answer when it is prose and no repair brings JSON; undefined: fail. */
    prose?: (text: string) => T | undefined;
    /** Told once what every call cost, whether the answer fit, fell back to prose, or failed. */
    spent?: (result: GenerateResult) => void;
  } = {},
): Promise<{ value: T; result: GenerateResult }> {
  const messages = [...request.messages];
  const usage: TokenUsage = { input_tokens: 0, output_tokens: 0 };
  const repairs = options.repairs ?? 1;
  let problem = '';
  let last: GenerateResult | undefined;
  let calls = 0;
  let prose = false;
  try {
    for (let attempt = 0; attempt <= repairs; attempt++) {
      const result = await provider.generate({ ...request, messages, json: true });
      calls++;
      last = result;
      usage.input_tokens += result.usage.input_tokens;
      usage.output_tokens += result.usage.output_tokens;
      let parsed: unknown;
      try {
        parsed = jsonIn(result.text);
      } catch (err) {
        problem = `not JSON: ${(err as Error).message}`;
        messages.push({ role: 'assistant', content: result.text }, { role: 'user', content: `That was ${problem}. Answer again with only the JSON object.` });
        continue;
      }
      const checked = schema.safeParse(parsed);
      if (checked.success) return { value: checked.data, result: { ...result, usage, calls } };
      problem = describeIssues(checked.error, parsed);
      messages.push({ role: 'assistant', content: result.text }, { role: 'user', content: `That JSON does not fit: ${problem}. Answer again with only the corrected JSON object.` });
    }
    const text = last?.text.trim() ?? '';
    const fallback = text && problem.startsWith('not JSON') ? options.prose?.(text) : undefined;
    if (fallback !== undefined) {
      prose = true;
      return { value: fallback, result: { ...last!, usage, calls, prose } };
    }
    throw new ThymosError(ErrorCode.LLM_OUTPUT_INVALID, `the model's output did not fit after ${repairs + 1} attempt(s): ${problem}`);
  } finally {
    if (last) options.spent?.({ ...last, usage, calls, prose });
  }
}
