/**
 * The application's domain: the evaluated Pkl schema (agents, personas, concepts, rules, filters), aliases, world tables and the reconcile context.
 */
export { type AliasEntry, AliasEntrySchema, aliasTable } from './alias-table.js';
export { type Capability, type Grantable, grants, parseCapability } from './capabilities.js';
export {
  type AgentDefinition,
  AgentDefinitionSchema,
  AgentIdSchema,
  agentIdsPreview,
  BUILT_IN_AGENT_PROPERTIES,
  type ConceptType,
  ConceptTypeSchema,
  type Condition,
  ContextPropertiesSchema,
  type DomainSchema,
  DomainSchemaSchema,
  EMPTY_DOMAIN,
  type EventFilter,
  EventFilterSchema,
  type LifecycleState,
  LifecycleStateSchema,
  type LlmOverride,
  loadDomainSchema,
  type NamedSearchStrategy,
  parseDomainSchema,
  type Persona,
  type RelationshipType,
  RelationshipTypeSchema,
  type RelevanceRule,
  SEARCH_METHODS,
  SearchStrategySchema,
  type WorldWatch,
  WorldWatchSchema,
} from './domain-schema.js';
export { appliesTo, type HeardEvent, hearsEvent, type Listener } from './event-filter.js';
export { checkFleet, type FleetWarning, fleetWarnings, toolGrants } from './fleet-checks.js';
export { fillUrl, parseUrlTemplate, UrlInputError, type UrlTemplate, wellFormed } from './http-url.js';
export { type LinkCheckLimits } from './outside-links.js';
export { type EvaluatePklOptions, pklBinaryPath } from './pkl-eval.js';
export {
  backoffAfter,
  type Queue,
  QueueNameSchema,
  queueProblems,
  QueueSchema,
  queueSkills,
  SkillNameSchema,
  type Work,
  workOf,
  type WorkRelevance,
  WorkRelevanceSchema,
} from './queue-schema.js';
export { compilePattern, patternProblem, type SafePattern } from './safe-pattern.js';
export { RESERVED_TOOL_NAMES } from './tool-problems.js';
export {
  argField,
  grantedTools,
  type HttpExecutor,
  keyFields,
  type McpExecutor,
  needsReason,
  PERMISSIONS,
  type ScriptExecutor,
  type Secret,
  SIDE_EFFECTS,
  type SubprocessArg,
  type SubprocessExecutor,
  type Tool,
  type ToolField,
  ToolFieldSchema,
  ToolNameSchema,
  type Tools,
  ToolSchema,
  toolSecrets,
  ToolsSchema,
} from './tool-schema.js';
export {
  checkWorldFilter,
  requireWorldTable,
  type WorldCondition,
  type WorldConditionInput,
  WorldConditionSchema,
  type WorldFilter,
  type WorldFilterInput,
  WorldFilterSchema,
  worldRowFieldsSchema,
  WorldRowIdSchema,
  type WorldTable,
  type WorldTables,
  WorldTableSchema,
} from './world-schema.js';
