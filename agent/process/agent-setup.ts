import { resolveConfigFile, type ThymosConfig, unreadableByDomain } from '../../shared/config/index.js';
import {
  type AgentDefinition,
  AgentDefinitionSchema,
  type AliasEntry,
  aliasTable,
  appliesTo,
  type ConceptType,
  type DomainSchema,
  grantedTools,
  loadDomainSchema,
  type NamedSearchStrategy,
  type RelationshipType,
  type Tools,
  type Work,
  workOf,
  type WorldWatch,
} from '../../shared/domain/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { AgentMode, AgentStartContext } from '../../shared/protocol/index.js';
import type { AgentOptions } from './agent-options.js';

/**
 * One agent's start, settled once: who it is and what the domain gives it, taken from its
 * start context (`--context FILE`, which a supervisor always writes) where that says, else
 * from the domain schema, else a default. Every phase of the start reads this, never the
 * start context or the domain itself.
 */
export interface AgentSetup {
  readonly id: string;
  /** The MCP port it listens on (`--port`). */
  readonly port: number;
  /** The mode it starts in (`--mode`). */
  readonly mode: AgentMode;
  /** Its settings: `thymos.toml`, with the NATS server a supervisor passed over `[nats] url`. */
  readonly config: ThymosConfig;
  readonly definition: AgentDefinition;
  /** False when neither the start context nor the domain defines it: it runs with a default persona. */
  readonly defined: boolean;
  /** Every alias of the domain (alias patterns, agents' names and aliases), for concepts, recall and plain-words calls. */
  readonly aliases: readonly AliasEntry[];
  /** What `link` may relate concepts with. */
  readonly relationshipTypes: Readonly<Record<string, RelationshipType>>;
  readonly conceptTypes: Readonly<Record<string, ConceptType>>;
  readonly searchStrategies: Readonly<Record<string, NamedSearchStrategy>>;
  /** The tools its capabilities grant. */
  readonly tools: Tools;
  /** The domain's world watches that apply to it, each with its index in the domain's list. */
  readonly worldWatches: ReadonlyArray<{ index: number; watch: WorldWatch }>;
  /** The queues and skills it takes jobs of. */
  readonly work: readonly Work[];
  /** The fencing token of its supervisor's ownership claim, from the start context; named in its status notices. */
  readonly ownershipToken: number | undefined;
}

/** What an agent's setup is settled from. */
export interface AgentSetupSources {
  options: Pick<AgentOptions, 'agentId' | 'port' | 'mode'>;
  config: ThymosConfig;
  context: AgentStartContext | undefined;
  /** The evaluated domain schema, when there is one and the start context holds no definition. */
  domain: DomainSchema | undefined;
  logger: Logger;
}

/** An agent's settings: `--config`, else `$THYMOS_CONFIG`, else `./thymos.toml`, else the defaults; `--nats-url` over `[nats] url`. */
export function agentConfig(options: Pick<AgentOptions, 'config' | 'natsUrl'>): ThymosConfig {
  const config = resolveConfigFile(options.config);
  return options.natsUrl ? Object.freeze({ ...config, nats: { ...config.nats, url: options.natsUrl } }) : config;
}

/**
 * Settles the setup, evaluating the domain schema (a Pkl child process) only when the start
 * context holds no definition and `thymos.toml` names a schema.
 */
export async function resolveAgentSetup(sources: Omit<AgentSetupSources, 'domain'>): Promise<AgentSetup> {
  const { context, config } = sources;
  const domain =
    context?.definition || !config.domainSchemaPath
      ? undefined
      : await loadDomainSchema(config.domainSchemaPath, { exclude: unreadableByDomain(config) });
  return agentSetupOf({ ...sources, domain });
}

/** The setup from a start context and a domain already at hand: each part from the context, else the domain, else a default. */
export function agentSetupOf(sources: AgentSetupSources): AgentSetup {
  const { options, config, context, domain, logger } = sources;
  const id = options.agentId;
  const { definition, defined } = resolveDefinition(id, context?.definition, domain, logger);
  return Object.freeze({
    id,
    port: options.port,
    mode: options.mode,
    config,
    definition,
    defined,
    aliases: context?.aliases ?? (domain ? aliasTable(domain) : []),
    relationshipTypes: context?.relationshipTypes ?? domain?.relationshipTypes ?? {},
    conceptTypes: context?.conceptTypes ?? domain?.conceptTypes ?? {},
    searchStrategies: context?.searchStrategies ?? domain?.searchStrategies ?? {},
    tools: context?.tools ?? (domain ? grantedTools(domain.tools, definition.capabilities) : {}),
    worldWatches: (context?.worldWatches ?? domain?.worldWatches ?? [])
      .map((watch, index) => ({ index, watch }))
      .filter(({ watch }) => appliesTo(watch, { id, tags: definition.tags })),
    work: workOf(definition, context?.queues ?? domain?.queues ?? {}),
    ownershipToken: context?.ownershipToken,
  });
}

/** The agent's definition: from its start context, else the domain, else a default persona. */
function resolveDefinition(
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
