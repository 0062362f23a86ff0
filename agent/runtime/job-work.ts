import { z } from 'zod';

import { describeIssues, ErrorCode, isThymosError } from '../../shared/errors/index.js';
import type { Job, ToolCallRecord } from '../../shared/protocol/index.js';
import type { LlmMessage, ToolStep } from '../llm/llm-provider.js';
import { ANSWER_SHAPES } from '../llm/llm-tasks.js';
import { goalsLine, personaPrompt } from '../llm/persona-prompt.js';
import { generateStructured } from '../llm/structured-output.js';
import type { NewMemory } from '../memory/agent-memory.js';
import { type Acting, type JobCalls, recordStep } from './acting.js';
import {
  type AgentBehavior,
  type AgentBehaviorContext,
  type JobDelivery,
  type JobRequest,
  type JobResult,
  JobResultSchema,
} from './agent-behavior.js';

/** What the worker makes of one delivery: how it ended, with the calls made while it was worked. */
export type JobEnding =
  { done: true; note: string; steps: ToolStep[] } | { done: false; retry: boolean; code: string; message: string; steps: ToolStep[] };

/** The tag of the memory an agent keeps of each job it worked. */
export const JOB_TAG = 'job';

/** Refusals that say "not now" rather than "no": the job is worth another delivery. */
const NOT_NOW: ReadonlySet<string> = new Set([
  ErrorCode.AGENT_NOT_ACTIVE,
  ErrorCode.AGENT_STOPPING,
  ErrorCode.CANCELLED,
  ErrorCode.TOOL_RATE_LIMITED,
  ErrorCode.TIMEOUT,
]);

/** The words of a job, where the default worker reads them: `payload.intent`, else `payload.text`, else a string payload. */
export function jobText(job: Job): string | undefined {
  const p = job.payload;
  const fields =
    p !== null && typeof p === 'object' && !Array.isArray(p)
      ? [(p as Record<string, unknown>).intent, (p as Record<string, unknown>).text]
      : [p];
  return fields.find((w): w is string => typeof w === 'string' && w.trim() !== '');
}

/**
 * The calls of one delivery of a job: made as `job:<id>`, the n-th call of each tool under
 * `job:<queue>/<skill>/<id>#<n>`. A job id holds no `/` or `#` and callers may not give keys that
 * begin `job:`, so no two jobs, and no other caller, share a key; a job worked again (a retry,
 * a crash, a requeue) makes the same calls under the same keys. A job id names one job for good:
 * reused for another job, its calls answer the first job's outcomes. `elsewhere`: an earlier
 * delivery may have gone to another worker (`JobDelivery.elsewhere`).
 */
export function jobCalls(job: Job, elsewhere = false): JobCalls {
  const made = new Map<string, number>();
  return {
    caller: `job:${job.id}`,
    elsewhere,
    keyOf: (tool) => {
      const n = (made.get(tool) ?? 0) + 1;
      made.set(tool, n);
      return `job:${job.queue}/${job.skill}/${job.id}#${n}`;
    },
  };
}

/**
 * A job as a behaviour is given it: its words, and the agent's tools bound to the job (its caller
 * and keys, its signal). Every call made through it is counted in `steps`.
 */
export function jobRequest(
  job: Job,
  delivery: JobDelivery,
  acting: Acting | undefined,
  signal: AbortSignal,
  steps: ToolStep[],
): Omit<JobRequest, 'byDefault'> {
  const calls = jobCalls(job, delivery.elsewhere);
  const ask = { caller: calls.caller, idempotencyKey: calls.keyOf, elsewhere: calls.elsewhere, signal };
  const reason = `job ${job.id} (${job.queue}/${job.skill})`;
  const counted = (record: ToolCallRecord): ToolCallRecord => {
    steps.push(recordStep(record));
    return record;
  };
  const loop = acting?.loop('reasoning', undefined, undefined, calls);
  return {
    ...delivery,
    job,
    text: jobText(job),
    signal,
    tools: loop && {
      ...loop,
      run: async (name, args, s) => {
        const out = await loop.run(name, args, s);
        steps.push({ ...out.step, ms: 0 });
        return out;
      },
    },
    act:
      acting &&
      (async (intent, why) => {
        const outcome = await acting.act(intent, why ?? reason, ask);
        if (outcome.record) counted(outcome.record);
        return outcome;
      }),
    resolve: acting && ((intent) => acting.resolve(intent, undefined, { signal })),
    call: acting && (async (tool, args) => counted(await acting.call(tool, args, ask))),
  };
}

/**
 * Works one delivery of a job: the behaviour's `work` when it has one, else the default — the
 * `[llm.reasoning]` model with the agent's tools when that use has a model that can call tools
 * and tools are granted, else the job's words resolved to one call as `act` resolves them (by
 * the `[llm.extraction]` model when one is set, else offline). Never throws: a
 * throw is a `retry` (CANCELLED and AGENT_STOPPING included: the job goes back to the queue), a
 * result that is not a `JobResult` is a `give_up` naming what was wrong. How it ended is
 * remembered (tag `job`, one memory per delivery).
 */
export async function workJob(
  behavior: AgentBehavior,
  context: AgentBehaviorContext,
  acting: Acting | undefined,
  job: Job,
  delivery: JobDelivery,
): Promise<JobEnding> {
  const steps: ToolStep[] = [];
  const bound = jobRequest(job, delivery, acting, context.signal, steps);
  // While it works the job, what the behaviour's context offers a model is the job's loop too.
  const ctx: AgentBehaviorContext = { ...context, tools: () => bound.tools };
  const request: JobRequest = { ...bound, byDefault: async () => resultOf(await byDefault(ctx, bound, steps)) };
  const ended = await working(behavior, ctx, request, steps);
  await ctx
    .remember(jobMemory(ctx.id, request, ended))
    .catch((err: unknown) => ctx.logger.warn({ err, job: request.job.id }, "the job's memory was not stored"));
  return ended;
}

async function working(behavior: AgentBehavior, ctx: AgentBehaviorContext, request: JobRequest, steps: ToolStep[]): Promise<JobEnding> {
  try {
    if (!behavior.work) return await byDefault(ctx, request, steps);
    const raw: unknown = await behavior.work(ctx, request);
    const parsed = JobResultSchema.safeParse(raw);
    if (!parsed.success)
      return {
        done: false,
        retry: false,
        code: ErrorCode.INVALID_REPLY,
        message: `work() of ${ctx.id} returned ${describeIssues(parsed.error, raw)}; expected {status: "done", note?} or {status: "retry" | "give_up", reason, code?}`,
        steps,
      };
    const r = parsed.data;
    return r.status === 'done'
      ? { done: true, note: r.note ?? '', steps }
      : { done: false, retry: r.status === 'retry', code: r.code ?? 'JOB_FAILED', message: r.reason, steps };
  } catch (err) {
    const code = isThymosError(err) ? err.code : request.signal.aborted ? ErrorCode.CANCELLED : ErrorCode.INTERNAL;
    return { done: false, retry: true, code, message: err instanceof Error ? err.message : String(err), steps };
  }
}

async function byDefault(ctx: AgentBehaviorContext, request: Omit<JobRequest, 'byDefault'>, steps: ToolStep[]): Promise<JobEnding> {
  const provider = ctx.model('reasoning');
  if (provider.kind !== 'offline' && provider.capabilities.tools && request.tools) return withModel(ctx, request, steps);
  return withWords(request, steps);
}

function resultOf(ended: JobEnding): JobResult {
  return ended.done
    ? { status: 'done', note: ended.note }
    : { status: ended.retry ? 'retry' : 'give_up', reason: ended.message, code: ended.code };
}

/** The memory of one delivery: the job's words (or payload), and how it ended with the calls it made. */
function jobMemory(self: string, request: JobRequest, ended: JobEnding): NewMemory {
  const { job, attempt, seq } = request;
  const what = (request.text ?? JSON.stringify(job.payload) ?? '').slice(0, 600);
  const how = ended.done
    ? `done${ended.note ? `: ${ended.note}` : ''}`
    : `${ended.retry ? 'to try again' : 'given up'} (${ended.code}): ${ended.message}`;
  return {
    // One per delivery; a job requeued from its dead letter is another message of the stream, with memories of its own.
    id: `job:${job.id}:${seq}:${attempt}`,
    content: `Job ${job.id} (${job.queue}/${job.skill}${attempt > 1 ? `, delivery ${attempt}` : ''}): ${what} → ${how}`.slice(0, 2000),
    tags: [JOB_TAG, job.skill, ended.done ? 'done' : ended.retry ? 'retry' : 'given_up', ...new Set(ended.steps.map((s) => s.tool))],
    importance: 0.5,
    source: { kind: 'job', by: self },
  };
}

/** The default without a model: the job's words resolved to one call, made as the job. */
async function withWords(request: Omit<JobRequest, 'byDefault'>, steps: ToolStep[]): Promise<JobEnding> {
  if (request.text === undefined)
    return {
      done: false,
      retry: false,
      code: ErrorCode.INVALID_INPUT,
      message: 'the job says nothing to do: expected payload.intent or payload.text (or a string payload)',
      steps,
    };
  if (!request.act)
    return { done: false, retry: false, code: ErrorCode.TOOL_DENIED, message: 'no tools are granted to work jobs with', steps };
  const { answer, record, error } = await request.act(request.text);
  if (record) {
    const note = `${record.tool} ${record.status} (call ${record.call_id})`;
    // A call that waits for a person (pending, or cut off by a crash and asked about) is done here: the worker holds the job until it is over.
    if (record.status === 'ok' || record.status === 'pending' || (record.status === 'interrupted' && record.interrupted_at !== undefined))
      return { done: true, note, steps };
    // A failed call (or one interrupted before the agent asked a person about such calls) may go through next time, as may one refused for now (the agent listening, a limit); one refused by permission or a person will not.
    const code = record.error?.code ?? ErrorCode.TOOL_FAILED;
    return {
      done: false,
      retry: record.status !== 'refused' || NOT_NOW.has(code),
      code,
      message: `${record.tool} ${record.status}: ${record.error?.message ?? ''}`.trim(),
      steps,
    };
  }
  if (error) return { done: false, retry: NOT_NOW.has(error.code), code: error.code, message: error.message, steps };
  const meant = answer.tool ?? answer.candidates[0]?.tool;
  return {
    done: false,
    retry: false,
    code: ErrorCode.INVALID_INPUT,
    message: `the words resolve to no call (${answer.outcome}${meant ? `, nearest ${meant}` : ''}${answer.missing.length > 0 ? `, missing ${answer.missing.join(', ')}` : ''}${answer.note ? `: ${answer.note}` : ''})`,
    steps,
  };
}

/**
 * How a job held for its calls ends once they are over: done when each ended `ok` (run, or
 * marked done by a person); given up when one was refused (by a person, or not run again after a
 * crash); tried again when one failed.
 */
export function settledEnding(records: readonly ToolCallRecord[]): JobEnding {
  const steps = records.map(recordStep);
  const note = records.map((r) => `${r.tool} ${r.status}${r.marked_done ? ' (marked done)' : ''} (call ${r.call_id})`).join(', ');
  const bad = records.find((r) => r.status !== 'ok');
  if (!bad) return { done: true, note, steps };
  return {
    done: false,
    retry: bad.status !== 'refused',
    code: bad.error?.code ?? ErrorCode.TOOL_FAILED,
    message: `${bad.tool} ${bad.status}: ${bad.error?.message ?? ''}`.trim(),
    steps,
  };
}

const MODEL_ANSWER = z.object({ status: z.enum(['done', 'retry', 'give_up']), summary: z.string().max(2000).default('') });

/**
 * The default with a model: the `[llm.reasoning]` model is given the job and the agent's tools
 * (`max_tool_steps`, `tool_budget_ms`), makes its calls through the governed path, and says how
 * the job ended. A call that waits for a person's approval is left to the person: the model is
 * told it counts as done.
 */
async function withModel(ctx: AgentBehaviorContext, request: Omit<JobRequest, 'byDefault'>, steps: ToolStep[]): Promise<JobEnding> {
  const { job, attempt, last } = request;
  const provider = ctx.model('reasoning');
  const again =
    attempt > 1
      ? ` This is delivery ${attempt}${last ? ', the last' : ''}: an earlier try did not finish. A call it made already answers its first outcome (replayed) rather than running again.`
      : '';
  const messages: LlmMessage[] = [
    {
      role: 'system',
      content: personaPrompt(
        ctx.definition.persona,
        goalsLine(ctx.definition),
        `You work jobs from the "${job.queue}" queue that need your skill "${job.skill}": do what the job asks with your tools, giving each call a reason. A call that waits for a person's approval has been asked for; that part is done.`,
        ANSWER_SHAPES.work,
      ),
    },
    {
      role: 'user',
      content: `Job ${job.id}, published ${job.published_at}.${again}\n${typeof job.payload === 'string' ? job.payload : JSON.stringify(job.payload, null, 1)}`,
    },
  ];
  const { value } = await generateStructured(provider, { messages, signal: request.signal }, MODEL_ANSWER, {
    spent: (r) => ctx.spent('reasoning', provider, r),
    tools: request.tools,
  });
  const calls = steps.length > 0 ? ` [${steps.map((s) => `${s.tool} ${s.status}`).join(', ')}]` : ' [no call]';
  if (value.status === 'done') return { done: true, note: `${value.summary}${calls}`.trim(), steps };
  const failed = steps.findLast((s) => s.status !== 'ok' && s.status !== 'pending');
  return {
    done: false,
    retry: value.status === 'retry',
    code: value.status === 'retry' ? (failed?.code ?? 'JOB_FAILED') : 'JOB_REFUSED',
    message: `${value.summary || 'the model gave no reason'}${calls}`,
    steps,
  };
}
