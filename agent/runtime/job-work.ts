import { z } from 'zod';

import { ErrorCode, isThymosError } from '../../shared/errors/errors.js';
import { describeIssues } from '../../shared/errors/zod-issues.js';
import type { Job } from '../../shared/protocol/job.js';
import type { LlmMessage, ToolStep } from '../llm/llm-provider.js';
import { ANSWER_SHAPES } from '../llm/llm-tasks.js';
import { goalsLine, personaPrompt } from '../llm/persona-prompt.js';
import { generateStructured } from '../llm/structured-output.js';
import type { NewMemory } from '../memory/agent-memory.js';
import { type Acting, actSteps } from './acting.js';
import { type AgentBehavior, type AgentBehaviorContext, type JobDelivery, type JobRequest, type JobResult, JobResultSchema } from './agent-behavior.js';

/** What the worker makes of one delivery: how it ended, with the calls made while it was worked. */
export type JobEnding = { done: true; note: string; steps: ToolStep[] } | { done: false; retry: boolean; code: string; message: string; steps: ToolStep[] };

/** The tag of the memory an agent keeps of each job it worked. */
export const JOB_TAG = 'job';

/** The words of a job, where the default worker reads them. */
export function jobText(job: Job): string | undefined {
  const p = job.payload;
  const words = typeof p === 'string' ? p : p !== null && typeof p === 'object' && !Array.isArray(p) ? ((p as Record<string, unknown>).intent ?? (p as Record<string, unknown>).text) : undefined;
  return typeof words === 'string' && words.trim() !== '' ? words : undefined;
}

/** A job as a behaviour is given it: its words, and the agent's tools bound to the job (caller `job:<id>`, the job's idempotency keys). */
export function jobRequest(job: Job, delivery: JobDelivery, acting: Acting | undefined): JobRequest {
  const reason = `job ${job.id} (${job.queue}/${job.skill})`;
  return {
    ...delivery,
    job,
    text: jobText(job),
    tools: acting?.loop('reasoning', undefined, undefined, job.id),
    act: acting && ((intent, why) => acting.act(intent, why ?? reason, { caller: `job:${job.id}`, idempotencyKey: job.id })),
  };
}

/**
 * Works one delivery of a job: the behaviour's `work` when it has one, else the default — the
 * `[llm.reasoning]` model with the agent's tools when a model is configured and tools are
 * granted, else the job's words resolved offline to one call. Never throws: a throw is a
 * `retry` (CANCELLED and AGENT_STOPPING included: the job goes back to the queue), a result
 * that is not a `JobResult` is a `give_up` naming what was wrong. How it ended is remembered
 * (tag `job`, one memory per delivery: a job worked twice is two memories that say so).
 */
export async function workJob(behavior: AgentBehavior, ctx: AgentBehaviorContext, request: JobRequest): Promise<JobEnding> {
  const ended = await working(behavior, ctx, request);
  await ctx.remember(jobMemory(ctx.id, request, ended)).catch((err: unknown) => ctx.logger.warn({ err, job: request.job.id }, 'the job\'s memory was not stored'));
  return ended;
}

async function working(behavior: AgentBehavior, ctx: AgentBehaviorContext, request: JobRequest): Promise<JobEnding> {
  const steps: ToolStep[] = [];
  const act = request.act;
  const counted: JobRequest = { ...request, act: act && (async (intent, reason) => { const o = await act(intent, reason); steps.push(...actSteps([o])); return o; }) };
  try {
    if (behavior.work) {
      const raw: unknown = await behavior.work(ctx, counted);
      const parsed = JobResultSchema.safeParse(raw);
      if (!parsed.success) return { done: false, retry: false, code: ErrorCode.INVALID_REPLY, message: `work() of ${ctx.id} returned ${describeIssues(parsed.error, raw)}; expected {status: "done", note?} or {status: "retry" | "give_up", reason, code?}`, steps };
      return ending(parsed.data, steps);
    }
    const provider = ctx.model('reasoning');
    if (provider.kind !== 'offline' && request.tools) return await withModel(ctx, request, steps);
    return await withWords(counted, steps);
  } catch (err) {
    const code = isThymosError(err) ? err.code : ErrorCode.INTERNAL;
    return { done: false, retry: true, code, message: err instanceof Error ? err.message : String(err), steps };
  }
}

/** The memory of one delivery: the job's words (or payload), and how it ended with the calls it made. */
function jobMemory(self: string, request: JobRequest, ended: JobEnding): NewMemory {
  const { job, attempt } = request;
  const what = (request.text ?? JSON.stringify(job.payload) ?? '').slice(0, 600);
  const how = ended.done ? `done${ended.note ? `: ${ended.note}` : ''}` : `${ended.retry ? 'to try again' : 'given up'} (${ended.code}): ${ended.message}`;
  return {
    id: `job:${job.id}:${attempt}`,
    content: `Job ${job.id} (${job.queue}/${job.skill}${attempt > 1 ? `, delivery ${attempt}` : ''}): ${what} → ${how}`.slice(0, 2000),
    tags: [JOB_TAG, job.skill, ended.done ? 'done' : ended.retry ? 'retry' : 'given_up', ...new Set(ended.steps.map((s) => s.tool))],
    importance: 0.5,
    source: { kind: 'job', by: self },
  };
}

function ending(result: JobResult, steps: ToolStep[]): JobEnding {
  if (result.status === 'done') return { done: true, note: result.note ?? '', steps };
  return { done: false, retry: result.status === 'retry', code: result.code ?? 'JOB_FAILED', message: result.reason, steps };
}

/** The default without a model: the job's words resolved to one call, made as the job. */
async function withWords(request: JobRequest, steps: ToolStep[]): Promise<JobEnding> {
  if (request.text === undefined) return { done: false, retry: false, code: ErrorCode.INVALID_INPUT, message: 'the job says nothing to do: expected payload.intent or payload.text (or a string payload)', steps };
  if (!request.act) return { done: false, retry: false, code: ErrorCode.TOOL_DENIED, message: 'no tools are granted to work jobs with', steps };
  const { answer, record, error } = await request.act(request.text);
  if (record) {
    const note = `${record.tool} ${record.status} (call ${record.call_id})`;
    if (record.status === 'ok' || record.status === 'pending') return { done: true, note, steps };
    // A failed or interrupted call may go through next time; a refused one (by permission or a person) will not.
    return { done: false, retry: record.status !== 'refused', code: record.error?.code ?? ErrorCode.TOOL_FAILED, message: `${record.tool} ${record.status}: ${record.error?.message ?? ''}`.trim(), steps };
  }
  if (error) return { done: false, retry: error.code === ErrorCode.AGENT_STOPPING || error.code === ErrorCode.CANCELLED || error.code === ErrorCode.TOOL_RATE_LIMITED, code: error.code, message: error.message, steps };
  const meant = answer.tool ?? answer.candidates[0]?.tool;
  return { done: false, retry: false, code: ErrorCode.INVALID_INPUT, message: `the words resolve to no call (${answer.outcome}${meant ? `, nearest ${meant}` : ''}${answer.missing.length > 0 ? `, missing ${answer.missing.join(', ')}` : ''}${answer.note ? `: ${answer.note}` : ''})`, steps };
}

const MODEL_ANSWER = z.object({ status: z.enum(['done', 'retry', 'give_up']), summary: z.string().max(2000).default('') });

/**
 * The default with a model: the `[llm.reasoning]` model is given the job and the agent's tools
 * (`max_tool_steps`, `tool_budget_ms`), makes its calls through the governed path, and says how
 * the job ended. A call that waits for a person's approval is left to the person: the model is
 * told it counts as done.
 */
async function withModel(ctx: AgentBehaviorContext, request: JobRequest, steps: ToolStep[]): Promise<JobEnding> {
  const { job, attempt, last } = request;
  const provider = ctx.model('reasoning');
  const again = attempt > 1 ? ` This is delivery ${attempt}${last ? ', the last' : ''}: an earlier try did not finish. A call it made already answers its first outcome (replayed) rather than running again.` : '';
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
    { role: 'user', content: `Job ${job.id}, published ${job.published_at}.${again}\n${typeof job.payload === 'string' ? job.payload : JSON.stringify(job.payload, null, 1)}` },
  ];
  const { value, result } = await generateStructured(provider, { messages, signal: ctx.signal }, MODEL_ANSWER, { spent: (r) => ctx.spent('reasoning', provider, r), tools: request.tools });
  steps.push(...(result.tool_steps ?? []));
  const calls = steps.length > 0 ? ` [${steps.map((s) => `${s.tool} ${s.status}`).join(', ')}]` : ' [no call]';
  if (value.status === 'done') return { done: true, note: `${value.summary}${calls}`.trim(), steps };
  const failed = steps.findLast((s) => s.status !== 'ok' && s.status !== 'pending');
  return { done: false, retry: value.status === 'retry', code: value.status === 'retry' ? (failed?.code ?? 'JOB_FAILED') : 'JOB_REFUSED', message: `${value.summary || 'the model gave no reason'}${calls}`, steps };
}
