import { EventEmitter } from 'node:events';

import type { AgentDefinition, NamedSearchStrategy } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { AgentMode, AgentState, Job, RelevanceInput } from '../../shared/protocol/index.js';
import { consolidateWithin } from '../consolidation/consolidate-within.js';
import type { ConsolidationReport, ConsolidationScope } from '../consolidation/consolidation-report.js';
import type { MemoryConsolidator } from '../consolidation/memory-consolidator.js';
import type { AgentModels, SamplingClient } from '../llm/agent-models.js';
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
import { AgentGate } from './agent-gate.js';
import { AgentLinks } from './agent-links.js';
import { decide, type Decision, decisionMemory, decisionNews, think, type Thought } from './agent-reasoner.js';
import { buildContext, type ContextPacket } from './context-packet.js';
import { EventReactions } from './event-reactions.js';
import { wordInsight } from './insight-writer.js';
import { type JobEnding, workJob } from './job-work.js';
import { SpokenText } from './reply-stream.js';
import type { AgentRuntimeOptions } from './runtime-options.js';
import type { Controllable, Conversing, RuntimeEvents, RuntimeGate, Working } from './runtime-ports.js';
import { RuntimeTallies } from './runtime-tallies.js';

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
  readonly #gate: AgentGate;
  #nats: AgentState['nats'] = 'disabled';
  #acting: Acting | undefined;
  readonly #tallies = new RuntimeTallies();
  readonly #models: AgentModels;
  readonly #reasonOnEvents: boolean;
  readonly #reactions: EventReactions;

  constructor(options: AgentRuntimeOptions) {
    super();
    this.id = options.id;
    this.definition = options.definition;
    this.defined = options.defined;
    this.port = options.port;
    this.#memory = options.memory;
    this.#store = options.store;
    this.#behavior = options.behavior;
    this.#logger = options.logger;
    const gate = (this.gate = this.#gate = new AgentGate(options.id, options.mode));
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
    return this.#gate.mode;
  }

  get status(): AgentState['status'] {
    return this.#gate.status;
  }

  get inFlight(): number {
    return this.#gate.inFlight;
  }

  getState(): AgentState {
    return {
      id: this.id,
      name: this.definition.persona.name,
      defined: this.defined,
      mode: this.#gate.mode,
      status: this.#gate.status,
      pid: process.pid,
      port: this.port,
      started_at: this.#startedAt,
      nats: this.#nats,
      memory_count: this.#memory.count,
      ...this.#tallies.state(),
    };
  }

  /** Cancels the model calls in flight; later calls get a fresh signal. */
  #cancelCalls(why: string): void {
    this.#reactions.clear();
    this.#gate.cancel(why);
  }

  /** Restores what the last snapshot saved; called once before the agent is ready. */
  restore(): Promise<void> {
    return this.#tallies.restore(this.#store);
  }

  setStatus(status: AgentState['status']): void {
    if (this.#gate.status === status) return;
    this.#gate.status = status;
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
    if (this.#gate.mode !== mode) {
      this.#logger.info({ from: this.#gate.mode, to: mode }, 'mode changed');
      const passivated = this.#gate.mode === 'active' && mode === 'passive';
      this.#gate.mode = mode;
      if (passivated) this.#cancelCalls(`${this.id} was passivated`);
      this.#changed();
      if (passivated && this.#consolidateOnPassivate) void this.consolidateWithin('passivation');
    }
    return this.getState();
  }

  /** A reply in character; with `onText`, passed on as it is written (`SpokenText`), and `signal` stops it. */
  async talk(request: TalkRequest): Promise<TalkReply> {
    return this.#gate.call(async () => {
      this.#gate.requireActive('it does not hold conversations now; it can still be read (state, recall)');
      const spoken = request.onText ? new SpokenText(request.onText) : undefined;
      const signal = request.signal ? AbortSignal.any([this.#gate.signal(), request.signal]) : this.#gate.signal();
      const reply = await this.#behavior.talk(this.#behaviorContext(request.client, request.chain, signal), {
        ...request,
        onText: spoken?.write,
        signal,
      });
      this.#tallies.conversations++;
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
    return this.#gate.call(async () => {
      this.#gate.requireActive('it takes no jobs now');
      return workJob(
        this.#behavior,
        this.#behaviorContext(undefined, undefined, AbortSignal.any([this.#gate.signal(), deadline])),
        this.#acting,
        job,
        delivery,
      );
    });
  }

  async remember(memory: NewMemory): Promise<MemoryRecord> {
    return this.#gate.call(async () => {
      this.#gate.requireActive();
      return this.#rememberAndAnnounce(memory);
    });
  }

  /**
   * Stores what the agent heard (world events). Unlike `remember`, works in passive mode:
   * Listening agents hear and remember too. Ids make it idempotent. With `storeWithinMs` the
   * memories are recallable and announced at once and stored within that time (`stored`).
   */
  async hear(memories: readonly NewMemory[], options: { live?: boolean; storeWithinMs?: number } = {}): Promise<MemoryRecord[]> {
    const reacting = options.live === true && this.#reasonOnEvents && this.#gate.mode === 'active' && this.#gate.status === 'ready';
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
    return this.#gate.call(async () => {
      this.#gate.requireActive('it does not reason now');
      return think(this.#behaviorContext(client), situation, options);
    });
  }

  /** `think`, then `decide`: the chosen action with its confidence and the thought behind it. */
  async decide(situation: string, options?: readonly string[], client?: SamplingClient, chain?: readonly string[]): Promise<Decision> {
    return this.#gate.call(async () => {
      this.#gate.requireActive('it does not reason now');
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
      if (this.#gate.mode !== 'active' || this.#gate.status !== 'ready') return;
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
    return this.#gate.call(async () => {
      if (this.#gate.mode !== 'active' && !options.dryRun)
        throw new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, `${this.id} is listening (passive): it consolidates only as a dry run now`);
      if (!this.#consolidator) throw new ThymosError(ErrorCode.INVALID_INPUT, `${this.id} has no consolidator`);
      return this.#consolidator.consolidate(scope, { trigger: 'demand', dryRun: options.dryRun ?? false });
    });
  }

  /** A scheduled or passivation consolidation within `budgetMs` (see `consolidateWithin`); never throws. */
  async consolidateWithin(trigger: 'schedule' | 'passivation', budgetMs = Infinity): Promise<void> {
    if (this.#consolidator) await consolidateWithin(this.#consolidator, trigger, budgetMs, this.#logger);
  }

  /**
   * Memories that match `query`. `strategy` is a search method (bm25, vector, hybrid, cascade) or the
   * name of one of the domain's search strategies; unset, the agent's own `searchStrategy`.
   */
  async recall(query: string, options: Omit<RecallOptions, 'strategy'> & { strategy?: string | undefined }): Promise<RecallHit[]> {
    const { strategy, ...rest } = options;
    return this.#gate.call(() =>
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
    const at = await this.#tallies.snapshot(this.#store, reason, this.#gate.mode);
    this.#logger.info({ reason }, 'snapshot saved');
    return at;
  }

  /** Resolves once no call is in flight, or after `timeoutMs`, whichever comes first. */
  drain(timeoutMs: number): Promise<boolean> {
    return this.#gate.drain(timeoutMs);
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

  #behaviorContext(client?: SamplingClient, chain?: readonly string[], signal = this.#gate.signal()): AgentBehaviorContext {
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
      disposition: this.#tallies.disposition.values,
      feel: (tone, changes) => this.#tallies.disposition.feel(tone, changes),
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
    this.#tallies.spending.record(
      result.usage,
      this.#models.cost(use, result.usage),
      result.calls,
      result.prose,
      result.invalid_tool_calls,
    );
    this.#changed();
  }

  #changed(): void {
    this.emit('state', this.getState());
  }
}
