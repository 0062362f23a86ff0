import { EventEmitter } from 'node:events';

import type { AgentDefinition, NamedSearchStrategy } from '../../shared/domain/domain-schema.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import type { Logger } from '../../shared/platform/logger.js';
import type { AgentMode, AgentState, RelevanceInput } from '../../shared/protocol/agent-protocol.js';
import type { Job } from '../../shared/protocol/job.js';
import { consolidateWithin } from '../consolidation/consolidate-within.js';
import type { ConsolidationReport, ConsolidationScope } from '../consolidation/consolidation-report.js';
import type { MemoryConsolidator } from '../consolidation/memory-consolidator.js';
import type { AgentModels, SamplingClient } from '../llm/agent-models.js';
import { LlmSpending } from '../llm/llm-spending.js';
import type { AgentMemory, NewMemory, RecallOptions } from '../memory/agent-memory.js';
import type { MemoryRecord, RecallHit } from '../memory/memory-record.js';
import type { MemoryStore } from '../memory/memory-store.js';
import { resolveSearchStrategy } from '../memory/search-strategy.js';
import { type Acting, withActs } from './acting.js';
import {
  type AgentBehavior,
  type AgentBehaviorContext,
  behaviorRelevance,
  type JobDelivery,
  type TalkReply,
  type TalkRequest,
} from './agent-behavior.js';
import { AgentConcepts } from './agent-concepts.js';
import { AgentDisposition } from './agent-disposition.js';
import { AgentLinks } from './agent-links.js';
import { decide, type Decision, decisionMemory, decisionNews, think, type Thought } from './agent-reasoner.js';
import { CallGate } from './call-gate.js';
import { buildContext, type ContextPacket } from './context-packet.js';
import { EventReactions } from './event-reactions.js';
import { wordInsight } from './insight-writer.js';
import { type JobEnding, workJob } from './job-work.js';
import { SpokenText } from './reply-stream.js';
import type { AgentRuntimeOptions } from './runtime-options.js';
import type { Controllable, Conversing, RuntimeEvents, RuntimeGate, Working } from './runtime-ports.js';
import { readSavedState, type SavedState } from './saved-state.js';

/**
 * One agent's behaviour independent of how it is reached: MCP tools and NATS control
 * both call in here. It owns mode and status, counts in-flight calls so a stop can
 * wait for them, and refuses dialogue while passive.
 */
export class AgentRuntime extends EventEmitter<RuntimeEvents> implements Conversing, Controllable, Working {
  readonly id: string;
  readonly definition: AgentDefinition;
  readonly defined: boolean;
  readonly port: number;
  readonly #memory: AgentMemory;
  readonly #store: MemoryStore;
  readonly #behavior: AgentBehavior;
  /** The shared world and other agents, once NATS is up. */
  readonly links: AgentLinks;
  /** How calls into the agent are counted and gated on its mode (its declared tools run through it). */
  readonly gate: RuntimeGate;
  /** The agent's concepts, as its tools read and write them. */
  readonly concepts: AgentConcepts;
  readonly #consolidator: MemoryConsolidator | undefined;
  readonly #consolidateOnPassivate: boolean;
  readonly #searchStrategies: Readonly<Record<string, NamedSearchStrategy>>;
  readonly #logger: Logger;
  readonly #startedAt = new Date().toISOString();
  #mode: AgentMode;
  #status: AgentState['status'] = 'starting';
  #nats: AgentState['nats'] = 'disabled';
  #conversations = 0;
  #lastSnapshotAt: string | null = null;
  readonly #calls = new CallGate();
  /** Aborted (and replaced) when the agent is passivated or stops: cancels model calls in flight. */
  #cancel = new AbortController();
  #acting: Acting | undefined;
  readonly #spending = new LlmSpending();
  readonly #models: AgentModels;
  readonly #reasonOnEvents: boolean;
  readonly #reactions: EventReactions;
  readonly #disposition = new AgentDisposition();

  constructor(options: AgentRuntimeOptions) {
    super();
    this.id = options.id;
    this.definition = options.definition;
    this.defined = options.defined;
    this.port = options.port;
    this.#mode = options.mode;
    this.#memory = options.memory;
    this.#store = options.store;
    this.#behavior = options.behavior;
    this.#logger = options.logger;
    const gate: RuntimeGate = (this.gate = {
      id: this.id,
      call: (fn) => this.#call(fn),
      isActive: () => this.#mode === 'active',
      requireActive: (refusal) => this.#requireActive(refusal),
      signal: () => this.#cancel.signal,
    });
    this.links = new AgentLinks(gate);
    this.concepts = new AgentConcepts(gate, options.concepts);
    this.#consolidator = options.consolidator;
    this.#consolidateOnPassivate = options.consolidateOnPassivate ?? false;
    this.#searchStrategies = options.searchStrategies ?? {};
    this.#models = options.models;
    this.#reasonOnEvents = options.reasonOnEvents ?? false;
    this.#reactions = new EventReactions(options.logger);
  }

  get mode(): AgentMode {
    return this.#mode;
  }

  get status(): AgentState['status'] {
    return this.#status;
  }

  get inFlight(): number {
    return this.#calls.inFlight;
  }

  getState(): AgentState {
    return {
      id: this.id,
      name: this.definition.persona.name,
      defined: this.defined,
      mode: this.#mode,
      status: this.#status,
      pid: process.pid,
      port: this.port,
      started_at: this.#startedAt,
      nats: this.#nats,
      memory_count: this.#memory.count,
      conversations: this.#conversations,
      last_snapshot_at: this.#lastSnapshotAt,
      ...(this.#spending.totals ? { llm: { ...this.#spending.totals } } : {}),
      ...(Object.keys(this.#disposition.values).length > 0 ? { disposition: { ...this.#disposition.values } } : {}),
    };
  }

  /** Cancels the model calls in flight; later calls get a fresh signal. */
  #cancelCalls(why: string): void {
    this.#reactions.clear();
    this.#cancel.abort(new ThymosError(ErrorCode.CANCELLED, why));
    this.#cancel = new AbortController();
  }

  /** Restores what the last snapshot saved; called once before the agent is ready. */
  async restore(): Promise<void> {
    const snap = await this.#store.latestSnapshot();
    if (!snap) return;
    const saved = readSavedState(snap.state);
    if (saved.conversations !== undefined) this.#conversations = saved.conversations;
    this.#spending.restore(saved.llm);
    this.#disposition.restore(saved.disposition);
    this.#lastSnapshotAt = new Date(snap.at).toISOString();
  }

  setStatus(status: AgentState['status']): void {
    if (this.#status === status) return;
    this.#status = status;
    if (status === 'stopping') this.#cancelCalls(`${this.id} is stopping`);
    this.#changed();
  }

  setNatsLink(link: AgentState['nats']): void {
    if (this.#nats === link) return;
    this.#nats = link;
    this.#changed();
  }

  /** Switches between active and passive at run time; no restart. */
  setMode(mode: AgentMode): AgentState {
    if (this.#mode !== mode) {
      this.#logger.info({ from: this.#mode, to: mode }, 'mode changed');
      const passivated = this.#mode === 'active' && mode === 'passive';
      this.#mode = mode;
      if (passivated) this.#cancelCalls(`${this.id} was passivated`);
      this.#changed();
      if (passivated && this.#consolidateOnPassivate) void this.consolidateWithin('passivation');
    }
    return this.getState();
  }

  /** A reply in character; with `onText`, passed on as it is written (`SpokenText`), and `signal` stops it. */
  async talk(request: TalkRequest): Promise<TalkReply> {
    return this.#call(async () => {
      this.#requireActive('it does not hold conversations now; it can still be read (state, recall)');
      const spoken = request.onText ? new SpokenText(request.onText) : undefined;
      const signal = request.signal ? AbortSignal.any([this.#cancel.signal, request.signal]) : this.#cancel.signal;
      const reply = await this.#behavior.talk(this.#behaviorContext(request.client, request.chain, signal), {
        ...request,
        onText: spoken?.write,
        signal,
      });
      this.#conversations++;
      this.#changed();
      const done = this.#acting ? withActs(reply, await this.#acting.actOnMarkers(reply, request, signal)) : reply;
      return spoken?.settle(done) ?? done;
    });
  }

  /** The behaviour's own relevance for a reconcile context, or undefined; a score outside 0..1 or a throw is an error the supervisor reports. */
  evaluateRelevance(input: RelevanceInput): Promise<number | undefined> {
    return behaviorRelevance(this.#behavior, this.#behaviorContext(), input);
  }

  /** Works one delivery of a job (`workJob`), only while active, until `deadline` or the agent listens or stops: how it ended, remembered as a `job` memory. */
  async work(job: Job, delivery: JobDelivery, deadline: AbortSignal): Promise<JobEnding> {
    return this.#call(async () => {
      this.#requireActive('it takes no jobs now');
      return workJob(
        this.#behavior,
        this.#behaviorContext(undefined, undefined, AbortSignal.any([this.#cancel.signal, deadline])),
        this.#acting,
        job,
        delivery,
      );
    });
  }

  async remember(memory: NewMemory): Promise<MemoryRecord> {
    return this.#call(async () => {
      this.#requireActive();
      return this.#rememberAndAnnounce(memory);
    });
  }

  /**
   * Stores what the agent heard (world events). Unlike `remember`, works in passive mode:
   * Listening agents hear and remember too. Ids make it idempotent. With `storeWithinMs` the
   * memories are recallable and announced at once and stored within that time (`stored`).
   */
  async hear(memories: readonly NewMemory[], options: { live?: boolean; storeWithinMs?: number } = {}): Promise<MemoryRecord[]> {
    const reacting = options.live === true && this.#reasonOnEvents && this.#mode === 'active' && this.#status === 'ready';
    // Only memories new to this agent are reasoned about: a redelivered event is stored once and decided once.
    const known = reacting ? new Set(memories.flatMap((m) => (m.id !== undefined && this.#memory.get(m.id) ? [m.id] : []))) : undefined;
    const records = await this.#rememberAllAndAnnounce(memories, options.storeWithinMs);
    if (known) for (const r of records) if (!known.has(r.id) && r.source.event !== undefined) this.#react(r);
    return records;
  }

  /** Resolves once everything heard so far is in the database. */
  stored(): Promise<void> {
    return this.#memory.stored();
  }

  /**
   * What `talk` (use `dialogue`, the conversation with `speaker`) or `think` (use `reasoning`)
   * would put in front of the model for `message`: the context packet, within the use's budget.
   */
  async context(message: string, use: ContextPacket['use'], speaker = 'stranger'): Promise<ContextPacket> {
    return buildContext(this.#behaviorContext(), use, message, this.#models.contextBudget(use), use === 'dialogue' ? speaker : undefined);
  }

  /**
   * `think(situation)` with the `[llm.reasoning]` model: steps and every option scored.
   * Options default to the agent's `actions`. Only while active: reasoning may spend tokens.
   */
  async think(situation: string, options?: readonly string[], client?: SamplingClient): Promise<Thought> {
    return this.#call(async () => {
      this.#requireActive('it does not reason now');
      return think(this.#behaviorContext(client), situation, options);
    });
  }

  /** `think`, then `decide`: the chosen action with its confidence and the thought behind it. */
  async decide(situation: string, options?: readonly string[], client?: SamplingClient, chain?: readonly string[]): Promise<Decision> {
    return this.#call(async () => {
      this.#requireActive('it does not reason now');
      const ctx = this.#behaviorContext(client, chain);
      return decide(ctx, await think(ctx, situation, options));
    });
  }

  /**
   * An insight in one sentence by the `[llm.consolidation]` model, from its source memories
   * and the consolidator's draft. Runs inside a consolidation, which the agent's mode allows.
   */
  async wordInsight(sources: readonly string[], draft: string): Promise<string> {
    return wordInsight(this.#behaviorContext(), this.definition.persona.name, sources, draft);
  }

  /** Queues think-and-decide about a heard event; the decision is remembered and announced. */
  #react(heard: MemoryRecord): void {
    this.#reactions.add(heard, async () => {
      if (this.#mode !== 'active' || this.#status !== 'ready') return;
      const decision = await this.decide(heard.content);
      const memory = await this.#rememberAndAnnounce(decisionMemory(this.id, heard, decision));
      this.emit('decision', decisionNews(this.id, heard, decision, memory.id));
    });
  }

  /** Whether a memory with this id is stored. */
  hasMemory = (id: string): boolean => this.#memory.get(id) !== undefined;

  /**
   * Consolidates the memories in `scope` now: themes, contradictions, fading. Writing needs the
   * agent active; a dry run (nothing written) works while listening.
   */
  async consolidate(scope: ConsolidationScope, options: { dryRun?: boolean | undefined } = {}): Promise<ConsolidationReport> {
    return this.#call(async () => {
      if (this.#mode !== 'active' && !options.dryRun)
        throw new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, `${this.id} is listening (passive): it consolidates only as a dry run now`);
      if (!this.#consolidator) throw new ThymosError(ErrorCode.INVALID_INPUT, `${this.id} has no consolidator`);
      return this.#consolidator.consolidate(scope, { trigger: 'demand', dryRun: options.dryRun ?? false });
    });
  }

  /** A scheduled or passivation consolidation within `budgetMs` (see `consolidateWithin`); never throws. */
  async consolidateWithin(trigger: 'schedule' | 'passivation', budgetMs = Infinity): Promise<void> {
    if (this.#consolidator) await consolidateWithin(this.#consolidator, trigger, budgetMs, this.#logger);
  }

  /** Writing memory over MCP needs the agent active. */
  #requireActive(refusal = 'its memory can be read, not written, over MCP'): void {
    if (this.#mode !== 'active') throw new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, `${this.id} is listening (passive): ${refusal}`);
  }

  /**
   * Memories that match `query`. `strategy` is a search method (bm25, vector, hybrid, cascade) or the
   * name of one of the domain's search strategies; unset, the agent's own `searchStrategy`.
   */
  async recall(query: string, options: Omit<RecallOptions, 'strategy'> & { strategy?: string | undefined }): Promise<RecallHit[]> {
    const { strategy, ...rest } = options;
    return this.#call(() =>
      this.#memory.recall(query, { ...rest, ...resolveSearchStrategy(strategy, this.definition.searchStrategy, this.#searchStrategies) }),
    );
  }

  /** The newest `limit` turns of the conversation with `speaker`, oldest first; works while listening. */
  conversation(speaker: string, limit: number): MemoryRecord[] {
    return this.#memory.threadTurns(speaker, limit);
  }

  recentMemories(limit: number): MemoryRecord[] {
    return this.#memory.recent(limit);
  }

  /** Saves the agent's state; memories are already durable. Returns when the database has it. */
  async snapshot(reason: string): Promise<string> {
    const at = Date.now();
    const llm = this.#spending.totals;
    const saved: SavedState = { conversations: this.#conversations, ...(llm ? { llm } : {}), disposition: this.#disposition.values };
    await this.#store.saveSnapshot({ at, reason, state: { ...saved, mode: this.#mode } });
    this.#lastSnapshotAt = new Date(at).toISOString();
    this.#logger.info({ reason }, 'snapshot saved');
    return this.#lastSnapshotAt;
  }

  /** Resolves once no call is in flight, or after `timeoutMs`, whichever comes first. */
  drain(timeoutMs: number): Promise<boolean> {
    return this.#calls.drain(timeoutMs);
  }

  #call<T>(fn: () => Promise<T>): Promise<T> {
    return this.#calls.run(this.id, this.#status === 'stopping', fn);
  }

  async #rememberAndAnnounce(memory: NewMemory): Promise<MemoryRecord> {
    return (await this.#rememberAllAndAnnounce([memory]))[0]!;
  }

  async #rememberAllAndAnnounce(memories: readonly NewMemory[], storeWithinMs?: number): Promise<MemoryRecord[]> {
    const records = await this.#memory.rememberMany(memories, Date.now(), storeWithinMs);
    for (const r of records) this.emit('memory', r);
    this.#changed();
    return records;
  }

  #behaviorContext(client?: SamplingClient, chain?: readonly string[], signal = this.#cancel.signal): AgentBehaviorContext {
    return {
      id: this.id,
      definition: this.definition,
      logger: this.#logger,
      recall: (query, options) =>
        this.#memory.recall(query, {
          ...resolveSearchStrategy(undefined, this.definition.searchStrategy, this.#searchStrategies),
          ...options,
        }),
      remember: (memory) => this.#rememberAndAnnounce(memory),
      rememberAll: (memories) => this.#rememberAllAndAnnounce(memories),
      recentTurns: (thread, limit) => this.#memory.threadTurns(thread, limit),
      signal,
      model: (use) => this.#models.provider(use, client),
      contextBudget: (use) => this.#models.contextBudget(use),
      tools: (use) =>
        this.#acting?.loop(use, chain, client && this.#models.settings(use).provider === 'mcp-sampling' ? client.name : undefined),
      spent: (use, provider, result) => this.account(use, provider, result),
      disposition: this.#disposition.values,
      feel: (tone, changes) => this.#disposition.feel(tone, changes),
    };
  }

  /** Gives the agent its granted tools: for its models, plain words, and `[TOOL: …]` in what it says (acted on, and taken out of the words the speaker hears); assembled after the runtime, whose gate they run behind. */
  useTools(acting: Acting): void {
    this.#acting = acting;
  }

  get acting(): Acting | undefined {
    return this.#acting;
  }

  /** Counts a model call's tokens and cost in the agent's state and metrics; offline answers cost nothing and are not counted. */
  account(...[use, provider, result]: Parameters<AgentBehaviorContext['spent']>): void {
    if (provider.kind === 'offline') return;
    this.#spending.record(result.usage, this.#models.cost(use, result.usage), result.calls, result.prose, result.invalid_tool_calls);
    this.#changed();
  }

  #changed(): void {
    this.emit('state', this.getState());
  }
}
