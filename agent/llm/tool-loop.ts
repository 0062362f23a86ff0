import { ErrorCode } from '../../shared/errors/index.js';
import {
  answer,
  type GenerateRequest,
  type GenerateResult,
  type LlmMessage,
  type LlmProvider,
  type ModelTool,
  type ModelToolCall,
  type TextSink,
  type TokenUsage,
  type ToolStep,
} from './llm-provider.js';

/** What a model's tool calls run with, and within what (`[llm.<use>] max_tool_steps`, `tool_budget_ms`). */
export interface ToolLoop {
  /** The tools the model is offered: the agent's granted tools, nothing else. */
  readonly tools: readonly ModelTool[];
  /** Most rounds of tool calls before the model must answer. */
  readonly maxSteps: number;
  /** From the loop's start: once spent, no call is offered or run, and one still running is cancelled. */
  readonly budgetMs: number;
  /**
   * Runs one call through the agent's governed path (validation, reason, permission, approval,
   * record) and answers what the model is shown and how the call ended. Never throws for a
   * call that was refused or failed: that is the model's to read.
   */
  run(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<{ content: unknown; step: Omit<ToolStep, 'ms'> }>;
}

/** The most calls one round may make; more in one answer are answered `not_run`. */
export const CALLS_PER_ROUND = 8;

/** A model's call as it can run: a tool it was offered and arguments that are a JSON object. */
function readCall(
  call: ModelToolCall,
  offered: ReadonlySet<string>,
): { name: string; args: Record<string, unknown> } | { problem: string } {
  if (!offered.has(call.name))
    return { problem: `there is no tool ${JSON.stringify(call.name.slice(0, 80))}; the tools are ${[...offered].join(', ')}` };
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return { problem: `the arguments of ${call.name} are not JSON (${(err as Error).message})` };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    return { problem: `the arguments of ${call.name} are not a JSON object` };
  return { name: call.name, args: args as Record<string, unknown> };
}

/**
 * Runs a model with tools in a bounded loop: each round, the model answers or asks for calls;
 * each call runs through `loop.run` and its result goes back as a `tool` message. The loop
 * stops offering calls after `maxSteps` rounds, once `budgetMs` is spent, or after a second
 * call that cannot be run as written (the first is fed back, coded LLM_TOOL_CALL_INVALID, for
 * the model to repair); the model then answers with the tools shown but not callable
 * (`toolChoice: "none"`). A call asked for once the budget is spent or the reply is cancelled,
 * or past the first CALLS_PER_ROUND of one answer, is answered `not_run`. Usage and calls add up over the rounds; `tool_steps` lists every call.
 *
 * A call the loop ran is not run again by anything here: a second loop (a repair of the
 * answer's shape) starts without tools. What a call does twice across a crash is the governed
 * path's idempotency key's to settle.
 *
 * With a `sink`, every round is streamed into it (`begin` before each answer).
 */
export async function runToolLoop(
  provider: LlmProvider,
  request: GenerateRequest,
  loop: ToolLoop,
  sink?: TextSink,
): Promise<GenerateResult> {
  const budget = AbortSignal.timeout(loop.budgetMs);
  const signal = request.signal ? AbortSignal.any([request.signal, budget]) : budget;
  const offered = new Set(loop.tools.map((t) => t.name));
  const messages: LlmMessage[] = [...request.messages];
  const usage: TokenUsage = { input_tokens: 0, output_tokens: 0 };
  const steps: ToolStep[] = [];
  let calls = 0;
  let invalid = 0;
  for (let round = 0; ; round++) {
    const offer = round < loop.maxSteps && !budget.aborted && invalid < 2;
    const result = await answer(provider, { ...request, messages, tools: loop.tools, toolChoice: offer ? 'auto' : 'none' }, sink);
    calls += result.calls ?? 1;
    usage.input_tokens += result.usage.input_tokens;
    usage.output_tokens += result.usage.output_tokens;
    const asked = result.tool_calls ?? [];
    if (asked.length === 0 || !offer) {
      const { tool_calls: _ignored, ...answer } = result;
      return { ...answer, usage, calls, tool_steps: steps, ...(invalid > 0 ? { invalid_tool_calls: invalid } : {}) };
    }
    messages.push({ role: 'assistant', content: result.text, tool_calls: asked });
    for (const [i, call] of asked.entries()) {
      const started = performance.now();
      const { content, step } =
        i >= CALLS_PER_ROUND
          ? notRun(call, `not run: at most ${CALLS_PER_ROUND} calls are made in one answer`, ErrorCode.TOOL_RATE_LIMITED)
          : await runOne(call, readCall(call, offered), invalid, budget, loop, signal);
      if (step.status === 'invalid') invalid++;
      steps.push({ ...step, ms: Math.round(performance.now() - started) });
      messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: JSON.stringify(content) });
    }
  }
}

async function runOne(
  call: ModelToolCall,
  read: ReturnType<typeof readCall>,
  invalidSoFar: number,
  budget: AbortSignal,
  loop: ToolLoop,
  signal: AbortSignal,
): Promise<{ content: unknown; step: Omit<ToolStep, 'ms'> }> {
  if ('problem' in read) {
    const again = invalidSoFar === 0 ? " Write the call again, as a JSON object of the tool's parameters." : '';
    return {
      content: { error: { code: ErrorCode.LLM_TOOL_CALL_INVALID, message: `${read.problem}.${again}` } },
      step: { tool: call.name.slice(0, 64), status: 'invalid', code: ErrorCode.LLM_TOOL_CALL_INVALID },
    };
  }
  if (budget.aborted)
    return notRun(call, `not run: the tool budget (${loop.budgetMs} ms) is spent; answer with what you have`, ErrorCode.TIMEOUT);
  if (signal.aborted) return notRun(call, 'not run: the reply was cancelled', ErrorCode.CANCELLED);
  return loop.run(read.name, read.args, signal);
}

function notRun(call: ModelToolCall, message: string, code: string): { content: unknown; step: Omit<ToolStep, 'ms'> } {
  return { content: { error: { code, message } }, step: { tool: call.name.slice(0, 64), status: 'not_run', code } };
}
