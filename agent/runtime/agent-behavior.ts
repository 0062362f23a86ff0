import { z } from 'zod';

import { type LlmContextSettings, type LlmUse } from '../../shared/config/index.js';
import type { AgentDefinition } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { Job, RelevanceInput, ToolCallRecord } from '../../shared/protocol/index.js';
import type { SamplingClient } from '../llm/agent-models.js';
import type { GenerateResult, LlmProvider, ToolStep } from '../llm/llm-provider.js';
import type { ToolLoop } from '../llm/tool-loop.js';
import type { NewMemory, RecallOptions } from '../memory/agent-memory.js';
import type { MemoryRecord, RecallHit } from '../memory/memory-record.js';
import type { ActOutcome, IntentAnswer } from './intent-answer.js';

/** One line said to an agent. */
export interface TalkRequest {
  /** What was said. */
  message: string;
  /** Who said it; also names the conversation thread. */
  speaker: string;
  /** The MCP client the line came through, when it can answer sampling requests (`mcp-sampling`). */
  client?: SamplingClient | undefined;
  /** Who sent the line (the MCP client, `Thymos-By`), for the record of what the reply's `[TOOL: …]` did. */
  caller?: string | undefined;
  /** The agents a chain of Mcp calls passed through to this line (`_meta["thymos/chain"]`), so the calls its reply makes count the hops. */
  chain?: readonly string[] | undefined;
  /**
   * Called with the reply's text as it is written, in order: the greeting and a line break when
   * the talk opens the conversation, then the reply. A behaviour may call it or not: whatever it has
   * not passed on is passed on when it returns, so the pieces always add up to the reply.
   */
  onText?: ((piece: string) => void) | undefined;
  /** Aborted when the speaker gives up on the reply: the model's request stops (`ctx.signal` is aborted too). */
  signal?: AbortSignal | undefined;
}

/** What the agent answers, with the memories it drew on. */
export interface TalkReply {
  /** The persona's greeting, when this talk opened the conversation with its speaker. */
  greeting?: string;
  reply: string;
  /** Memories recall found for the message and the reply used. */
  grounding: RecallHit[];
  /** How it was said, when the behaviour knows (a model's `emotional_tone`). */
  tone?: string;
  /** What the agent does besides talking, when the behaviour says. */
  actions?: string[];
  state_changes?: Record<string, unknown>;
  /** Facts taken from what was said, each stored as a memory. */
  learned?: string[];
  /** Who wrote the reply: `offline`, or provider and model (`openai-compatible:llama3.2`). */
  model?: string;
  /** The calls of the agent's tools its model made while it answered, in order. */
  tool_calls?: ToolStep[];
}

/** Which delivery of a job this is: the first is 1; `last` when the queue's `maxDeliver` allows no other; `seq`, the job's place in its queue's stream. */
export interface JobDelivery {
  attempt: number;
  last: boolean;
  seq: number;
  /**
   * An earlier delivery of the job may have gone to another worker (this agent was not handed
   * every one before this), which may have made the job's calls and not lived to record them.
   * Its calls of tools that write outside the agent (`writes_external`, `irreversible`), when no
   * record here answers under their key and their service does not honour it (`keyHonoured`),
   * wait for a person as interrupted rather than run; the others run as on any delivery.
   */
  elsewhere: boolean;
}

/**
 * A job as a behaviour's `work` is given it, with what it may act with as the job. Every call
 * made through `tools`, `act` or `call` is made as `job:<id>` under the job's idempotency keys
 * (`job:<queue>/<skill>/<id>#<n>`, n counting the calls of each tool from 1), so a job worked
 * again makes its calls under the same keys and a call with side effects already made answers
 * its first outcome. `tools`, `act`, `resolve` and `call` are undefined when nothing is granted.
 */
export interface JobRequest extends JobDelivery {
  job: Job;
  /** The job's words: `payload.intent`, else `payload.text`, else the payload when it is a string. */
  text: string | undefined;
  /** Aborted once the queue's `maxWorkMs` is spent, and when the agent listens or stops (as `context.signal` is). */
  signal: AbortSignal;
  /** The `[llm.reasoning]` model's tool loop over the granted tools (for `generateStructured(…, { tools })`); undefined too when `max_tool_steps` is 0. */
  tools: ToolLoop | undefined;
  /** Resolves plain words to a call of the granted tools and makes it when it is confident and complete (as `act` does). */
  act: ((intent: string, reason?: string) => Promise<ActOutcome>) | undefined;
  /** What plain words mean among the granted tools; nothing runs. */
  resolve: ((intent: string) => Promise<IntentAnswer>) | undefined;
  /** One call of a granted tool by name, its `reason` among the arguments; the record says how it ended (a call refused before it is a record throws). */
  call: ((tool: string, args: Record<string, unknown>) => Promise<ToolCallRecord>) | undefined;
  /** Works the job as the agent does without this `work()` — its model with its tools when one is configured, else its words — and says how that ended. */
  byDefault(): Promise<JobResult>;
}

/**
 * How a behaviour's `work` says a job ended: `done` (acknowledged), `retry` (delivered again
 * after the queue's back-off, until `maxDeliver`), or `give_up` (a dead letter now). `code` is
 * the dead letter's reason code (default JOB_FAILED). A `work` that throws is `retry`. A note or
 * reason longer than 2,000 characters is cut there; other keys are ignored.
 */
export const JobResultSchema = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('done'),
    note: z
      .string()
      .transform((t) => t.slice(0, 2000))
      .optional(),
  }),
  z.object({
    status: z.enum(['retry', 'give_up']),
    reason: z
      .string()
      .min(1, 'say why')
      .transform((t) => t.slice(0, 2000)),
    code: z
      .string()
      .regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'an upper-case code such as TOOL_FAILED')
      .optional(),
  }),
]);
export type JobResult = z.infer<typeof JobResultSchema>;

/** What a behaviour may use of its agent. */
export interface AgentBehaviorContext {
  readonly id: string;
  readonly definition: AgentDefinition;
  readonly logger: Logger;
  recall(query: string, options: RecallOptions & { filter?: (m: MemoryRecord) => boolean }): Promise<RecallHit[]>;
  remember(memory: NewMemory): Promise<MemoryRecord>;
  /** Stores several memories in one write, in order. */
  rememberAll(memories: readonly NewMemory[]): Promise<MemoryRecord[]>;
  /** The newest `limit` memories of a conversation thread, oldest first. */
  recentTurns(thread: string, limit: number): MemoryRecord[];
  /** Aborted when the agent is passivated or stops: pass it to model calls so they stop at once. */
  readonly signal: AbortSignal;
  /** The provider of a use for this call (`[llm.<use>]` with the agent's overrides). */
  model(use: LlmUse): LlmProvider;
  /** How much of what the agent remembers a use's prompt may carry (`[llm.<use>] context_tokens`, `context_min_relevance`). */
  contextBudget(use: 'dialogue' | 'reasoning'): LlmContextSettings;
  /**
   * The agent's granted tools for a use's model to call in a bounded loop through the governed
   * path (`[llm.<use>] max_tool_steps`, `tool_budget_ms`); undefined when none is granted or the
   * use allows no steps.
   */
  tools(use: 'dialogue' | 'reasoning'): ToolLoop | undefined;
  /** Counts a model call's tokens and cost, for the agent's state and metrics (offline calls cost nothing and are not counted). */
  spent(use: LlmUse, provider: LlmProvider, result: GenerateResult): void;
  /** How the agent is now: its mood and what replies changed (`state_changes`); kept across restarts. */
  readonly disposition: Readonly<Record<string, unknown>>;
  /** Records a reply's tone as the agent's mood and merges its state changes into the disposition. */
  feel(tone: string, changes: Record<string, unknown>): void;
}

/**
 * How an agent talks. The default works offline; an application replaces it by naming
 * a module in `thymos.toml` (`[agent] behavior = "./my-behavior.js"`) whose
 * `createBehavior()` returns one of these.
 *
 * @example
 * export function createBehavior() {
 *   return { async talk(ctx, req) { return { reply: `${ctx.definition.persona.name} nods.`, grounding: [] }; } };
 * }
 */
export interface AgentBehavior {
  talk(context: AgentBehaviorContext, request: TalkRequest): Promise<TalkReply>;
  /**
   * The agent's own relevance (0..1) for a reconcile context, asked by the supervisor when
   * neither the application's module nor the Pkl rules score this agent. Return
   * `undefined` to leave the agent to the default score. Optional.
   */
  evaluateRelevance?(context: AgentBehaviorContext, input: RelevanceInput): Promise<number | undefined> | number | undefined;
  /**
   * Works one delivery of a job from a queue the agent serves, and says how it ended (see
   * `JobResult`); a throw is `retry`. It may run again for the same job after a crash or a
   * `retry`: act through `request.tools` or `request.act`, whose calls carry the job's
   * idempotency keys. Optional: without it, the default works the job (`[llm.reasoning]` model
   * with the agent's tools, else the job's words resolved to one call).
   */
  work?(context: AgentBehaviorContext, request: JobRequest): Promise<JobResult> | JobResult;
}

/** What an application's `createBehavior()` returns: an `AgentBehavior`, whose `talk` may be left out (the agent then talks as `DialogueBehavior` does). */
export type BehaviorModule = Omit<AgentBehavior, 'talk'> & Partial<Pick<AgentBehavior, 'talk'>>;

/** The export an application's behaviour module must have. */
export type CreateBehavior = (options: { id: string; definition: AgentDefinition }) => BehaviorModule | Promise<BehaviorModule>;

/**
 * A behaviour's own relevance for a reconcile context, or undefined when it has none. A score
 * outside 0..1 is INVALID_INPUT naming the agent; a throwing behaviour's error passes through.
 */
export async function behaviorRelevance(
  behavior: AgentBehavior,
  ctx: AgentBehaviorContext,
  input: RelevanceInput,
): Promise<number | undefined> {
  const evaluate = behavior.evaluateRelevance;
  if (!evaluate) return undefined;
  const score = await evaluate.call(behavior, ctx, input);
  if (score === undefined) return undefined;
  if (typeof score !== 'number' || !(score >= 0 && score <= 1)) {
    throw new ThymosError(
      ErrorCode.INVALID_INPUT,
      `${ctx.id}: evaluateRelevance returned ${JSON.stringify(score)}; expected a number from 0 to 1 or undefined`,
    );
  }
  return score;
}
