import { createHash } from 'node:crypto';

import type { AgentDefinition } from '../../shared/domain/index.js';
import { CompromiseExtractor, type ConceptExtractor, type Logger } from '../../shared/platform/index.js';
import { ConceptTracker } from '../concepts/concept-tracker.js';
import { ModelConceptExtractor } from '../concepts/model-concept-extractor.js';
import { MemoryConsolidator } from '../consolidation/memory-consolidator.js';
import { IntentActs, knownNames } from '../intents/intent-acts.js';
import { modelReader } from '../intents/model-reader.js';
import { customWordsModel } from '../intents/words-model.js';
import { AgentModels } from '../llm/agent-models.js';
import type { GenerateResult, LlmProvider } from '../llm/llm-provider.js';
import { AgentMemory } from '../memory/agent-memory.js';
import type { MemoryStore } from '../memory/memory-store.js';
import { AgentRuntime } from '../runtime/agent-runtime.js';
import { toolLoopOf } from '../tools/model-tools.js';
import { ToolCaller } from '../tools/tool-caller.js';
import type { AgentSetup } from './agent-setup.js';
import { loadBehavior } from './behavior-loader.js';

/** How soon the memory of a tool call is in the database: recallable at once, written behind, off the call's path. */
const TOOL_MEMORY_WITHIN_MS = 1000;

/** What an agent is made of once its database is open: its memory and runtime. */
export interface AssembledAgent {
  memory: AgentMemory;
  runtime: AgentRuntime;
  /** The declared tools its capabilities grant, behind the governed path. */
  tools: ToolCaller;
}

/** What `assembleAgent` builds an agent from. */
export interface AssemblyOptions {
  setup: AgentSetup;
  /** The agent's private database, open. */
  store: MemoryStore;
  logger: Logger;
  /**
   * Finds the concepts a memory mentions, when no `[llm.extraction]` model does (and behind one, when it fails).
   * @default new CompromiseExtractor()
   */
  extractor?: ConceptExtractor | undefined;
  /** Under a lease, the agent's fence: checked before each of its tool calls. */
  fence?: { check(): void } | undefined;
}

/**
 * Builds one agent on its open store from its setup: memory and index, concepts, consolidator, models, behaviour and
 * runtime, with the state its last snapshot saved, and its granted tools.
 */
export async function assembleAgent(options: AssemblyOptions): Promise<AssembledAgent> {
  const { setup, store, logger } = options;
  const { id, config, definition } = setup;
  const memory = await AgentMemory.load(store, config.memory, { logger });
  const models = new AgentModels(id, config.llm, definition, process.env, { config: config.file, domain: config.domainSchemaPath });
  // What the extraction model spends is counted once the runtime that counts it exists.
  let account: ((provider: LlmProvider, result: GenerateResult) => void) | undefined;
  const concepts = await trackConcepts({
    setup,
    memory,
    store,
    models,
    extractor: options.extractor ?? new CompromiseExtractor(),
    spent: (p, r) => account?.(p, r),
    logger,
  });
  const consolidator = new MemoryConsolidator({ memory, store, concepts, settings: config.memory, logger });
  await seedKnowledge(memory, store, definition, id);
  const behavior = await loadBehavior({ config, id, definition });

  const runtime = new AgentRuntime({
    id,
    definition,
    defined: setup.defined,
    mode: setup.mode,
    port: setup.port,
    memory,
    store,
    concepts,
    consolidator,
    searchStrategies: setup.searchStrategies,
    consolidateOnPassivate: config.memory.consolidate_on_passivate,
    models,
    reasonOnEvents: definition.reasonOnEvents ?? config.agent.reason_on_events,
    behavior,
    logger,
  });
  await runtime.restore();
  account = (provider, result) => runtime.account('extraction', provider, result);
  if (models.usesModel('consolidation')) consolidator.useWriter((sources, draft) => runtime.wordInsight(sources, draft));
  const tools = await governTools({ setup, store, runtime, models, logger, fence: options.fence });
  return { memory, runtime, tools };
}

/** The concept tracker on the agent's memory when `[memory] concepts` is on, finding concepts with the extraction model when there is one. */
async function trackConcepts(options: {
  setup: AgentSetup;
  memory: AgentMemory;
  store: MemoryStore;
  models: AgentModels;
  extractor: ConceptExtractor;
  spent: (provider: LlmProvider, result: GenerateResult) => void;
  logger: Logger;
}): Promise<ConceptTracker | undefined> {
  const { setup, models, extractor, logger } = options;
  if (!setup.config.memory.concepts) return undefined;
  const finder = models.usesModel('extraction')
    ? new ModelConceptExtractor({
        provider: () => models.provider('extraction'),
        fallback: extractor,
        conceptTypes: Object.keys(setup.conceptTypes),
        spent: options.spent,
        logger,
      })
    : extractor;
  return ConceptTracker.attach(options.memory, options.store, {
    extractor: finder,
    settings: setup.config.memory,
    aliases: setup.aliases,
    relationshipTypes: setup.relationshipTypes,
    conceptTypes: setup.conceptTypes,
    logger,
  });
}

/**
 * The agent's granted tools behind the governed path, given to its runtime to act with; approved calls run when it is
 * next Active, and calls the last stop cut off are marked interrupted.
 */
async function governTools(options: {
  setup: AgentSetup;
  store: MemoryStore;
  runtime: AgentRuntime;
  models: AgentModels;
  logger: Logger;
  fence?: { check(): void } | undefined;
}): Promise<ToolCaller> {
  const { setup, store, runtime, models, logger } = options;
  const { config } = setup;
  const fence = options.fence;
  const tools = new ToolCaller({
    agent: setup.id,
    guard: fence && (() => fence.check()),
    tools: setup.tools,
    gate: runtime.gate,
    calls: store,
    // A call is remembered whatever the mode: a Listening agent's read-only calls too. Recallable at once, written behind within a second (with a read-only call's record; any other call's record is written before it answers).
    remember: (memories) => runtime.hear(memories, { storeWithinMs: TOOL_MEMORY_WITHIN_MS }),
    world: () => runtime.links.toolWorld(),
    allowAdmin: config.tools.allow_admin,
    approvalTimeoutS: config.tools.approval_timeout_s,
    maxPending: config.tools.max_pending,
    maxHops: config.tools.max_hops,
    recordReadsWithinMs: config.tools.record_reads_within_ms,
    scripts: { memoryMb: config.tools.script_memory_mb, maxThreads: config.tools.script_threads },
    env: process.env,
    logger,
  });
  runtime.useTools(actingOf({ tools, runtime, models, setup, logger }));
  // An approved call that changes something waits for the agent to be Active: it runs when the agent next becomes so.
  let mode = runtime.mode;
  runtime.on('state', (s) => {
    if (s.mode === mode) return;
    mode = s.mode;
    if (mode === 'active') void tools.runApproved();
  });
  // An agent granted no tool has made no call: its start does not pay for the look.
  const interrupted = Object.keys(tools.tools).length > 0 ? await tools.recover() : 0;
  if (interrupted) logger.warn({ calls: interrupted }, 'tool calls cut off by the last stop marked interrupted');
  return tools;
}

/**
 * What the agent does with its granted tools beyond a call by name: a model of dialogue or
 * reasoning calls them as itself (`model:<use>`) through the same path; plain words and
 * `[TOOL: …]` are resolved to calls, with the names the domain gives ids.
 */
function actingOf(options: {
  tools: ToolCaller;
  runtime: AgentRuntime;
  models: AgentModels;
  setup: AgentSetup;
  logger: Logger;
}): IntentActs {
  const { tools, runtime, models, setup, logger } = options;
  const glossary = setup.config.glossaryPath;
  const wordsModel = customWordsModel(setup.config);
  return new IntentActs({
    caller: tools,
    known: knownNames(setup.aliases),
    ...(glossary ? { glossaryDir: glossary } : {}),
    ...(wordsModel ? { modelDir: wordsModel } : {}),
    remember: (memories) => runtime.hear(memories, { storeWithinMs: TOOL_MEMORY_WITHIN_MS }),
    loop: (use, chain, by, job) =>
      toolLoopOf(tools, {
        caller: by ?? `model:${use}`,
        maxSteps: models.settings(use).max_tool_steps ?? 0,
        budgetMs: models.settings(use).tool_budget_ms ?? 20_000,
        ...(chain ? { chain } : {}),
        ...(job ? { keyOf: job.keyOf, elsewhere: job.elsewhere } : {}),
      }),
    logger,
    // With an `[llm.extraction]` model, it chooses among the candidates (or none) and fills the arguments; offline, the ranking's bars and the deterministic filler do.
    ...(models.usesModel('extraction')
      ? {
          model: modelReader(
            tools.tools,
            (client) => models.provider('extraction', client),
            (p, r) => runtime.account('extraction', p, r),
          ),
        }
      : {}),
  });
}

/** Stores each `knowledge` fact of the definition once, however often the agent starts. */
async function seedKnowledge(memory: AgentMemory, store: MemoryStore, definition: AgentDefinition, id: string): Promise<void> {
  if (definition.knowledge.length === 0) return;
  const seeded = new Set((await store.getMeta<string[]>('knowledge_seeded')) ?? []);
  const fresh = definition.knowledge.filter((fact) => !seeded.has(hash(fact)));
  if (fresh.length === 0) return;
  await memory.rememberMany(
    fresh.map((content) => ({ content, importance: 0.7, tags: ['knowledge'], source: { kind: 'knowledge', by: id } })),
  );
  for (const f of fresh) seeded.add(hash(f));
  await store.setMeta('knowledge_seeded', [...seeded]);
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
