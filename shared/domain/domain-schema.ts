import { dirname, resolve } from 'node:path';

import { z } from 'zod';

import { LLM_PROVIDERS } from '../config/llm-settings.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import { describeIssues } from '../errors/zod-issues.js';
import { evaluatePkl, type EvaluatePklOptions } from './pkl-eval.js';
import { withPklLine } from './pkl-lines.js';
import { QueueNameSchema, queueProblems, QueueSchema, SkillNameSchema, WorkRelevanceSchema } from './queue-schema.js';
import { toolProblems } from './tool-problems.js';
import { resolveScriptPaths, ToolsSchema } from './tool-schema.js';
import {
  checkWorldFilter,
  RESERVED_WORLD_FIELDS,
  RESERVED_WORLD_TABLES,
  WorldFilterSchema,
  WorldNameSchema,
  WorldTableSchema,
} from './world-schema.js';

/** Lower-case letters, digits and underscores, starting with a letter; at most 48 characters. */
export const AgentIdSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,47}$/, 'expected an agent id: a lower-case letter, then lower-case letters, digits or _ (at most 48)');

export const LifecycleStateSchema = z.enum(['active', 'listening', 'dormant', 'archived']);
export type LifecycleState = z.infer<typeof LifecycleStateSchema>;

export const PersonaSchema = z.object({
  name: z.string().min(1),
  traits: z.array(z.string()).default([]),
  speechStyle: z.string().default('plain'),
  background: z.string().default(''),
  greeting: z.string().nullish(),
  /** How a model is told who it is: the domain's `prompts["persona"]` filled in for this persona (set when the domain is read). */
  prompt: z.string().nullish(),
});
export type Persona = z.infer<typeof PersonaSchema>;

/** The placeholders a `prompts["persona"]` template may use, and what each is filled with. */
const PERSONA_PLACEHOLDERS: Record<string, (p: Persona) => string> = {
  name: (p) => p.name,
  traits: (p) => p.traits.join(', '),
  speechStyle: (p) => p.speechStyle,
  background: (p) => p.background,
};

/** An agent's own model for one use, over `[llm.<use>]` of thymos.toml; unset keys keep the file's. */
export const LlmOverrideSchema = z
  .object({
    provider: z.enum(LLM_PROVIDERS).nullish(),
    baseUrl: z.string().nullish(),
    model: z.string().min(1).nullish(),
    apiKeyEnv: z.string().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    maxTokens: z.number().int().min(1).nullish(),
  })
  .strict();
export type LlmOverride = z.infer<typeof LlmOverrideSchema>;

export const AgentDefinitionSchema = z.object({
  persona: PersonaSchema,
  tags: z.array(z.string()).default([]),
  homeLocation: z.string().nullish(),
  aliases: z.array(z.string()).default([]),
  pinned: LifecycleStateSchema.nullish(),
  /** Its MCP port, always (`[supervisor] agent_ports` wins). Unset: the port it had last while free. */
  port: z.number().int().min(1).max(65_535).nullish(),
  knowledge: z.array(z.string()).default([]),
  searchStrategy: z.string().min(1).nullish(),
  /** Per-use model overrides: `dialogue`, `reasoning`, `extraction`, `consolidation`. */
  llm: z
    .object({
      dialogue: LlmOverrideSchema.nullish(),
      reasoning: LlmOverrideSchema.nullish(),
      extraction: LlmOverrideSchema.nullish(),
      consolidation: LlmOverrideSchema.nullish(),
    })
    .strict()
    .nullish(),
  /** What the agent wants; given to its model in dialogue and reasoning. */
  goals: z.array(z.string().min(1)).default([]),
  /** What the agent may do when it reasons about what it heard, e.g. "raise the alarm". */
  actions: z.array(z.string().min(1)).default([]),
  /** Reason about heard events; unset: `[agent] reason_on_events`. */
  reasonOnEvents: z.boolean().nullish(),
  /** Which of the domain's tools it may call: `[!][tag:]pattern`, the last match deciding. */
  capabilities: z.array(z.string().min(1)).default([]),
  /** The kinds of job it takes from the work queues (`skills`), and from which (`queues`; empty: every queue). */
  skills: z.array(SkillNameSchema).default([]),
  queues: z.array(QueueNameSchema).default([]),
});
export type AgentDefinition = z.infer<typeof AgentDefinitionSchema>;

const ScalarSchema = z.union([z.string(), z.number(), z.boolean()]);

export const SEARCH_METHODS = ['bm25', 'vector', 'hybrid', 'cascade'] as const;

/** A named way of searching memory. */
export const SearchStrategySchema = z.object({
  method: z.enum(SEARCH_METHODS).default('bm25'),
  semanticWeight: z.number().min(0).max(1).nullish(),
});
export type NamedSearchStrategy = z.infer<typeof SearchStrategySchema>;

export const ConceptTypeSchema = z.object({
  description: z.string().default(''),
  attributes: z
    .record(
      z.string(),
      z.object({
        type: z.enum(['string', 'number', 'boolean']).default('string'),
        required: z.boolean().default(false),
        allowedValues: z.array(z.string()).nullish(),
      }),
    )
    .default({}),
});

export type ConceptType = z.infer<typeof ConceptTypeSchema>;

export const RelationshipTypeSchema = z.object({
  symmetric: z.boolean().default(false),
  properties: z
    .record(
      z.string(),
      z.object({
        type: z.enum(['string', 'number', 'boolean']).default('number'),
        min: z.number().nullish(),
        max: z.number().nullish(),
        defaultValue: ScalarSchema.nullish(),
      }),
    )
    .default({}),
});

export type RelationshipType = z.infer<typeof RelationshipTypeSchema>;

export const EventFilterSchema = z.object({
  agents: z.array(AgentIdSchema).default([]),
  agentTags: z.array(z.string()).default([]),
  eventTags: z.array(z.string()).default([]),
  sameLocation: z.boolean().default(false),
  mentions: z.boolean().default(false),
});
export type EventFilter = z.infer<typeof EventFilterSchema>;

export const ConditionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('equals'), property: z.string().min(1), value: ScalarSchema }),
  z.object({ kind: z.literal('truthy'), property: z.string().min(1) }),
  z.object({ kind: z.literal('same_as'), property: z.string().min(1), global: z.string().min(1) }),
  z.object({ kind: z.literal('at_most'), property: z.string().min(1), value: z.number() }),
]);
export type Condition = z.infer<typeof ConditionSchema>;

/** The properties of a reconcile context something reads: of each agent's entry (`agent`) and of `global`. */
export const ContextPropertiesSchema = z
  .object({
    agent: z.array(z.string().min(1)).default([]),
    global: z.array(z.string().min(1)).default([]),
  })
  .strict();

export const RelevanceRuleSchema = z.object({
  name: z.string().min(1),
  condition: ConditionSchema,
  score: z.number().min(0).max(1),
  agents: z.array(AgentIdSchema).default([]),
});
export type RelevanceRule = z.infer<typeof RelevanceRuleSchema>;

export const AliasPatternSchema = z.object({
  pattern: z.string().min(1),
  target: z.string().min(1),
  type: z.string().default('person'),
});

/**
 * A standing live query of the agents it names (or tags, or every agent when both are
 * empty): each matching change to the world table becomes a memory of theirs.
 */
export const WorldWatchSchema = WorldFilterSchema.extend({
  agents: z.array(AgentIdSchema).default([]),
  agentTags: z.array(z.string()).default([]),
});
export type WorldWatch = z.infer<typeof WorldWatchSchema>;

/** The evaluated domain schema: what `schemas/Thymos.pkl`, amended by an application, produces. */
export const DomainSchemaSchema = z.object({
  agents: z.record(AgentIdSchema, AgentDefinitionSchema).default({}),
  conceptTypes: z.record(z.string(), ConceptTypeSchema).default({}),
  relationshipTypes: z.record(z.string(), RelationshipTypeSchema).default({}),
  eventFilters: z.array(EventFilterSchema).default([]),
  relevanceRules: z.array(RelevanceRuleSchema).default([]),
  aliasPatterns: z.array(AliasPatternSchema).default([]),
  /** Prompt templates: `persona`, filled per agent into `persona.prompt`. */
  prompts: z
    .object({ persona: z.string().min(1).optional() })
    .strict()
    .default({}),
  worldTables: z.record(WorldNameSchema, WorldTableSchema).default({}),
  worldWatches: z.array(WorldWatchSchema).default([]),
  searchStrategies: z.record(WorldNameSchema, SearchStrategySchema).default({}),
  /** Context properties besides those the rules use: of each agent's entry and of `global`. */
  contextProperties: ContextPropertiesSchema.prefault({}),
  /** Tools agents may be granted through their capabilities. */
  tools: ToolsSchema.default({}),
  queues: z.record(QueueNameSchema, QueueSchema).default({}),
  workRelevance: WorkRelevanceSchema.nullish(),
});
export type DomainSchema = z.infer<typeof DomainSchemaSchema>;

/** A domain with no agents, for running without a Pkl module. */
export const EMPTY_DOMAIN: DomainSchema = Object.freeze(DomainSchemaSchema.parse({}));

/**
 * Evaluates an application's Pkl module with `pkl eval -f json` and validates it. The module
 * reads only its application's folder (`root`, by default the module's folder) and Thymos's
 * schemas: see `pklReadScope`.
 */
export async function loadDomainSchema(file: string, options: EvaluatePklOptions = {}): Promise<DomainSchema> {
  const stdout = await evaluatePkl(file, options);
  let raw: unknown;
  try {
    raw = JSON.parse(stdout);
  } catch (err) {
    throw new ThymosError(ErrorCode.SCHEMA_INVALID, `domain schema ${file}: pkl did not produce JSON`, { cause: err, location: { file } });
  }
  return parseDomainSchema(raw, file);
}

/** Validates an evaluated domain schema (JSON from Pkl, or an object built in code); an error names the Pkl line where it can. */
export function parseDomainSchema(raw: unknown, file = '<domain schema>'): DomainSchema {
  try {
    return checkedDomain(raw, file);
  } catch (err) {
    throw withPklLine(err, file);
  }
}

function checkedDomain(raw: unknown, file: string): DomainSchema {
  const result = DomainSchemaSchema.safeParse(raw);
  if (!result.success) {
    const path = result.error.issues[0]?.path.map(String).join('.');
    throw new ThymosError(ErrorCode.SCHEMA_INVALID, `domain schema ${file}: ${describeIssues(result.error, raw)}`, {
      location: { file, path },
    });
  }
  checkWorldDeclarations(result.data, file);
  checkSearchStrategies(result.data, file);
  checkReferences(result.data, file);
  checkTools(result.data, file);
  fillPersonaPrompts(result.data, file);
  return deepFreeze(result.data);
}

/** Tool names, fields, executors and the agents' capabilities hold together; Script paths become absolute. */
function checkTools(domain: DomainSchema, file: string): void {
  const [problem] = toolProblems(domain.tools, domain.agents, file);
  if (problem)
    throw new ThymosError(ErrorCode.SCHEMA_INVALID, `domain schema ${file}: ${problem[0]}: ${problem[1]}`, {
      location: { file, path: problem[0] },
    });
  resolveScriptPaths(domain.tools, file.startsWith('<') ? process.cwd() : dirname(resolve(file)));
}

/** Named strategies do not shadow the three methods; an agent's strategy is a method or a declared name. */
function checkSearchStrategies(domain: DomainSchema, file: string): void {
  const fail = (path: string, message: string) => {
    throw new ThymosError(ErrorCode.SCHEMA_INVALID, `domain schema ${file}: ${path}: ${message}`, { location: { file, path } });
  };
  for (const name of Object.keys(domain.searchStrategies)) {
    if ((SEARCH_METHODS as readonly string[]).includes(name))
      fail(`searchStrategies.${name}`, `${name} is a search method already; choose another name`);
  }
  for (const [id, agent] of Object.entries(domain.agents)) {
    const s = agent.searchStrategy;
    if (s != null && !(SEARCH_METHODS as readonly string[]).includes(s) && !Object.hasOwn(domain.searchStrategies, s)) {
      fail(
        `agents.${id}.searchStrategy`,
        `expected ${[...SEARCH_METHODS, ...Object.keys(domain.searchStrategies)].join(', ')}; got ${JSON.stringify(s)}`,
      );
    }
  }
}

/** World tables do not shadow Thymos's own tables or row fields; watches name declared tables and fields. */
function checkWorldDeclarations(domain: DomainSchema, file: string): void {
  const fail = (path: string, message: string) => {
    throw new ThymosError(ErrorCode.SCHEMA_INVALID, `domain schema ${file}: ${path}: ${message}`, { location: { file, path } });
  };
  for (const [name, table] of Object.entries(domain.worldTables)) {
    if (RESERVED_WORLD_TABLES.includes(name))
      fail(`worldTables.${name}`, `${name} is kept by Thymos (${RESERVED_WORLD_TABLES.join(', ')}); choose another table name`);
    for (const field of Object.keys(table.fields)) {
      if (RESERVED_WORLD_FIELDS.includes(field))
        fail(`worldTables.${name}.fields.${field}`, `every row already has ${RESERVED_WORLD_FIELDS.join(', ')}; choose another field name`);
    }
  }
  domain.worldWatches.forEach((watch, i) => {
    try {
      checkWorldFilter(domain.worldTables, watch, `worldWatches.${i}.`);
    } catch (err) {
      fail(`worldWatches.${i}`, (err as Error).message);
    }
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The agent ids an error offers as expected: the first eight, then how many in all. */
export function agentIdsPreview(ids: readonly string[]): string {
  return ids.length > 8 ? `${ids.slice(0, 8).join(', ')}, … (${ids.length})` : ids.join(', ') || '(none defined)';
}

/** Agent properties Thymos reads from a reconcile context itself: a forced score and where the agent is. */
export const BUILT_IN_AGENT_PROPERTIES: readonly string[] = ['relevance', 'location'];

/**
 * What the domain names exists: the agents of relevance rules, event filters and world
 * watches are agents of the schema; once `contextProperties` declares any property, the
 * properties the rules test are among those declared.
 */
export function checkReferences(domain: DomainSchema, file: string): void {
  const fail = (path: string, message: string) => {
    throw new ThymosError(ErrorCode.SCHEMA_INVALID, `domain schema ${file}: ${path}: ${message}`, { location: { file, path } });
  };
  const known = (id: string) => Object.hasOwn(domain.agents, id);
  const expected = `expected one of ${agentIdsPreview(Object.keys(domain.agents))}`;
  const lists = [
    ...domain.relevanceRules.map((r, i) => ({ path: `relevanceRules[${i}] (${r.name}).agents`, agents: r.agents })),
    ...domain.eventFilters.map((f, i) => ({ path: `eventFilters[${i}].agents`, agents: f.agents })),
    ...domain.worldWatches.map((w, i) => ({ path: `worldWatches[${i}].agents`, agents: w.agents })),
  ];
  for (const { path, agents } of lists) {
    for (const id of agents) if (!known(id)) fail(path, `no agent "${id}"; ${expected}`);
  }
  for (const [path, message] of queueProblems(domain)) fail(path, message);
  const declared = domain.contextProperties;
  if (declared.agent.length === 0 && declared.global.length === 0) return;
  const agentProps = new Set([...BUILT_IN_AGENT_PROPERTIES, ...declared.agent]);
  domain.relevanceRules.forEach((r, i) => {
    const path = `relevanceRules[${i}] (${r.name}).condition`;
    if (!agentProps.has(r.condition.property))
      fail(`${path}.property`, `"${r.condition.property}" is not in contextProperties.agent (${[...agentProps].join(', ')})`);
    if (r.condition.kind === 'same_as' && !declared.global.includes(r.condition.global)) {
      fail(
        `${path}.global`,
        `"${r.condition.global}" is not in contextProperties.global (${declared.global.join(', ') || 'none declared'})`,
      );
    }
  });
}

/** Fills `prompts["persona"]` for every agent; a placeholder it does not know is SCHEMA_INVALID naming the ones it does. */
function fillPersonaPrompts(domain: DomainSchema, file: string): void {
  const template = domain.prompts.persona;
  if (template === undefined) return;
  for (const unknown of template.matchAll(/\{(\w+)\}/g)) {
    if (!Object.hasOwn(PERSONA_PLACEHOLDERS, unknown[1]!)) {
      const known = Object.keys(PERSONA_PLACEHOLDERS)
        .map((k) => `{${k}}`)
        .join(', ');
      throw new ThymosError(
        ErrorCode.SCHEMA_INVALID,
        `domain schema ${file}: prompts.persona: unknown placeholder {${unknown[1]}}; expected ${known}`,
        {
          location: { file, path: 'prompts.persona' },
        },
      );
    }
  }
  for (const agent of Object.values(domain.agents)) {
    agent.persona.prompt ??= template.replace(/\{(\w+)\}/g, (_m, key: string) => PERSONA_PLACEHOLDERS[key]!(agent.persona));
  }
}
