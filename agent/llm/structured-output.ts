import { type z } from 'zod';

import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { jsonIn } from './json-text.js';
import { answer, type GenerateRequest, type GenerateResult, type LlmProvider, type TextSink, type TokenUsage } from './llm-provider.js';
import { runToolLoop, type ToolLoop } from './tool-loop.js';

/**
 * Output that must match `schema`: asked in JSON mode, parsed and validated; when it does not
 * validate, the model is shown its output and what was wrong, and asked again (`repairs`
 * times, default 1). Usage adds up over the attempts. LLM_OUTPUT_INVALID when none validates.
 *
 * Streamed (`stream`), an answer is passed on as it is written; once some of it was heard, a
 * repair is asked whole (the speaker has the start of it already: what the caller makes of the
 * repaired answer is its own), and when none fits, what was heard is the answer, through `prose`.
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
    /** The first attempt runs the model with these tools (`runToolLoop`); a repair is asked without them, so no call runs twice. */
    tools?: ToolLoop | undefined;
    /** Answers stream into it while nothing was heard; `sent` is what was heard, `said` the same as the model wrote it (complete `[TOOL: …]` kept). */
    stream?: (TextSink & { readonly sent: string; readonly said: string }) | undefined;
  } = {},
): Promise<{ value: T; result: GenerateResult }> {
  const messages = [...request.messages];
  const usage: TokenUsage = { input_tokens: 0, output_tokens: 0 };
  const repairs = options.repairs ?? 1;
  let problem = '';
  let last: GenerateResult | undefined;
  let calls = 0;
  let prose = false;
  let acted: Pick<GenerateResult, 'tool_steps' | 'invalid_tool_calls'> = {};
  try {
    for (let attempt = 0; attempt <= repairs; attempt++) {
      const asked = { ...request, messages, json: true };
      const sink = options.stream?.sent ? undefined : options.stream;
      const result =
        attempt === 0 && options.tools && provider.capabilities.tools
          ? await runToolLoop(provider, asked, options.tools, sink)
          : await answer(provider, asked, sink);
      if (attempt === 0)
        acted = {
          ...(result.tool_steps ? { tool_steps: result.tool_steps } : {}),
          ...(result.invalid_tool_calls ? { invalid_tool_calls: result.invalid_tool_calls } : {}),
        };
      calls += result.calls ?? 1;
      last = result;
      usage.input_tokens += result.usage.input_tokens;
      usage.output_tokens += result.usage.output_tokens;
      let parsed: unknown;
      try {
        parsed = jsonIn(result.text);
      } catch (err) {
        problem = `not JSON: ${(err as Error).message}`;
        messages.push(
          { role: 'assistant', content: result.text },
          { role: 'user', content: `That was ${problem}. Answer again with only the JSON object.` },
        );
        continue;
      }
      const checked = schema.safeParse(parsed);
      if (checked.success) return { value: checked.data, result: { ...result, ...acted, usage, calls } };
      problem = describeIssues(checked.error, parsed);
      messages.push(
        { role: 'assistant', content: result.text },
        { role: 'user', content: `That JSON does not fit: ${problem}. Answer again with only the corrected JSON object.` },
      );
    }
    const text = last?.text.trim() ?? '';
    const heard = options.stream?.sent ? options.stream.said : undefined;
    const fallback = heard ? options.prose?.(heard) : text && problem.startsWith('not JSON') ? options.prose?.(text) : undefined;
    if (fallback !== undefined) {
      prose = true;
      return { value: fallback, result: { ...last!, ...acted, usage, calls, prose } };
    }
    throw new ThymosError(ErrorCode.LLM_OUTPUT_INVALID, `the model's output did not fit after ${repairs + 1} attempt(s): ${problem}`);
  } finally {
    if (last) options.spent?.({ ...last, ...acted, usage, calls, prose });
  }
}
