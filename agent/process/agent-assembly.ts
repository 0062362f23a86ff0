import { createHash } from 'node:crypto';

import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import { type AliasEntry, aliasTable } from '../../shared/domain/alias-table.js';
import { type AgentDefinition, AgentDefinitionSchema, type DomainSchema } from '../../shared/domain/domain-schema.js';
import { grantedTools } from '../../shared/domain/tool-schema.js';
import { CompromiseExtractor, type ConceptExtractor } from '../../shared/platform/concept-extractor.js';
import type { Logger } from '../../shared/platform/logger.js';
import type { AgentStartContext } from '../../shared/protocol/agent-start-context.js';
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
import type { AgentOptions } from './agent-options.js';
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

/**
 * Builds one agent on its open store from its definition: memory and index, concepts, consolidator, models, behaviour and
 * runtime, with the state its last snapshot saved.
 */
export async function assembleAgent(
  options: AgentOptions,
  config: ThymosConfig,
  store: MemoryStore,
  startContext: AgentStartContext | undefined,
  domain: DomainSchema | undefined,
  resolved: { definition: AgentDefinition; defined: boolean },
  logger: Logger,
  extractor: ConceptExtractor = new CompromiseExtractor(),
): Promise<AssembledAgent> {
  const { definition, defined } = resolved;
  const memory = await AgentMemory.load(store, config.memory, { logger });
  const models = new AgentModels(options.agentId, config.llm, definition, process.env, {
    config: config.file,
    domain: config.domainSchemaPath,
  });
  // What the extraction model spends is counted once the runtime that counts it exists.
  let account: ((provider: LlmProvider, result: GenerateResult) => void) | undefined;
  let concepts: ConceptTracker | undefined;
  if (config.memory.concepts) {
    const aliases = startContext?.aliases ?? (domain ? aliasTable(domain) : []);
    const relationshipTypes = startContext?.relationshipTypes ?? domain?.relationshipTypes ?? {};
    const conceptTypes = startContext?.conceptTypes ?? domain?.conceptTypes ?? {};
    const finder = models.usesModel('extraction')
      ? new ModelConceptExtractor({
          provider: () => models.provider('extraction'),
          fallback: extractor,
          conceptTypes: Object.keys(conceptTypes),
          spent: (p, r) => account?.(p, r),
          logger,
        })
      : extractor;
    concepts = await ConceptTracker.attach(memory, store, {
      extractor: finder,
      settings: config.memory,
      aliases,
      relationshipTypes,
      conceptTypes,
      logger,
    });
  }
  const consolidator = new MemoryConsolidator({ memory, store, concepts, settings: config.memory, logger });
  await seedKnowledge(memory, store, definition, options.agentId);
  const behavior = await loadBehavior({ config, id: options.agentId, definition });

  const runtime = new AgentRuntime({
    id: options.agentId,
    definition,
    defined,
    mode: options.mode,
    port: options.port,
    memory,
    store,
    concepts,
    consolidator,
    searchStrategies: startContext?.searchStrategies ?? domain?.searchStrategies ?? {},
    consolidateOnPassivate: config.memory.consolidate_on_passivate,
    models,
    reasonOnEvents: definition.reasonOnEvents ?? config.agent.reason_on_events,
    behavior,
    logger,
  });
  await runtime.restore();
  account = (provider, result) => runtime.account('extraction', provider, result);
  if (models.usesModel('consolidation')) consolidator.useWriter((sources, draft) => runtime.wordInsight(sources, draft));
  const tools = new ToolCaller({
    agent: options.agentId,
    tools: startContext?.tools ?? (domain ? grantedTools(domain.tools, definition.capabilities) : {}),
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
  runtime.useTools(
    actingOf(
      tools,
      runtime,
      models,
      {
        aliases: startContext?.aliases ?? (domain ? aliasTable(domain) : []),
        glossary: config.glossaryPath,
        model: customWordsModel(config),
      },
      logger,
    ),
  );
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
  return { memory, runtime, tools };
}

/**
 * What the agent does with its granted tools beyond a call by name: a model of dialogue or
 * reasoning calls them as itself (`model:<use>`) through the same path; plain words and
 * `[TOOL: …]` are resolved to calls, with the names the domain gives ids.
 */
function actingOf(
  tools: ToolCaller,
  runtime: AgentRuntime,
  models: AgentModels,
  words: { aliases: readonly AliasEntry[]; glossary: string | undefined; model: string | undefined },
  logger: Logger,
): IntentActs {
  return new IntentActs({
    caller: tools,
    known: knownNames(words.aliases),
    ...(words.glossary ? { glossaryDir: words.glossary } : {}),
    ...(words.model ? { modelDir: words.model } : {}),
    remember: (memories) => runtime.hear(memories, { storeWithinMs: TOOL_MEMORY_WITHIN_MS }),
    loop: (use, chain, by, keyOf) =>
      toolLoopOf(tools, {
        caller: by ?? `model:${use}`,
        maxSteps: models.settings(use).max_tool_steps ?? 0,
        budgetMs: models.settings(use).tool_budget_ms ?? 20_000,
        ...(chain ? { chain } : {}),
        ...(keyOf ? { keyOf } : {}),
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

/** The agent's definition: from its start context, else the domain, else a default persona. */
export function resolveDefinition(
  id: string,
  fromContext: AgentDefinition | undefined,
  domain: DomainSchema | undefined,
  logger: Logger,
): { definition: AgentDefinition; defined: boolean } {
  if (fromContext) return { definition: fromContext, defined: true };
  const found = domain?.agents[id];
  if (found) return { definition: found, defined: true };
  logger.info({ agent: id }, 'agent id not defined by the domain schema; running with a default persona');
  return { definition: defaultDefinition(id), defined: false };
}

/** The persona of an agent that no schema defines: named after its id, plain-spoken. */
export function defaultDefinition(id: string): AgentDefinition {
  const name = id
    .split('_')
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join(' ');
  return AgentDefinitionSchema.parse({ persona: { name, traits: [], speechStyle: 'plain' } });
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
