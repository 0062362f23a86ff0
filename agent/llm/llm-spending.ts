import type { TokenUsage } from './llm-provider.js';

/** What an agent's model calls added up to. */
export interface LlmTotals {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  /** Replies a model gave in prose, used as they were because no repair brought the structured answer. */
  prose_replies?: number;
  /** Tool calls a model wrote that could not run as written (LLM_TOOL_CALL_INVALID). */
  invalid_tool_calls?: number;
}

/** Calls to models, their tokens and their cost, kept across restarts; offline answers are not counted. */
export class LlmSpending {
  #totals: LlmTotals | undefined;

  /** The totals so far; undefined until a model was called. */
  get totals(): LlmTotals | undefined {
    return this.#totals;
  }

  restore(saved: Partial<LlmTotals> | undefined): void {
    if (saved && typeof saved.calls === 'number') {
      this.#totals = {
        calls: saved.calls,
        input_tokens: saved.input_tokens ?? 0,
        output_tokens: saved.output_tokens ?? 0,
        cost: saved.cost ?? 0,
        ...(saved.prose_replies ? { prose_replies: saved.prose_replies } : {}),
        ...(saved.invalid_tool_calls ? { invalid_tool_calls: saved.invalid_tool_calls } : {}),
      };
    }
  }

  /** Adds `calls` calls (a repair is a call too), one prose reply when the answer was prose used as it was, and the tool calls that could not run as written. */
  record(usage: TokenUsage, cost: number, calls = 1, prose = false, invalidToolCalls = 0): void {
    const t = (this.#totals ??= { calls: 0, input_tokens: 0, output_tokens: 0, cost: 0 });
    t.calls += calls;
    if (prose) t.prose_replies = (t.prose_replies ?? 0) + 1;
    if (invalidToolCalls > 0) t.invalid_tool_calls = (t.invalid_tool_calls ?? 0) + invalidToolCalls;
    t.input_tokens += usage.input_tokens;
    t.output_tokens += usage.output_tokens;
    t.cost = Math.round((t.cost + cost) * 1e6) / 1e6;
  }
}
