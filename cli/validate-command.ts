import { resolveConfig } from '../agent/process/agent-process.js';
import { checkFleet, toolGrants } from '../shared/domain/index.js';
import { commandNamed } from './command-book.js';
import { exampleReport } from './example-report.js';
import { parseCommandArgs } from './fleet-args.js';

/** `thymos validate`: checks thymos.toml and the domain schema, prints what they define. */
export async function runValidateCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandArgs(argv, commandNamed('validate')!) as {
    values: { config?: string; json?: boolean; strict?: boolean; intents?: boolean };
  };
  const config = resolveConfig(values.config);
  const { domain, warnings } = await checkFleet(config, values.strict);
  for (const w of warnings) process.stderr.write(`thymos: warning: ${w.message}\n`);
  const summary = {
    config: config.file ?? '(built-in defaults)',
    data_dir: config.dataPath,
    domain_schema: config.domainSchemaPath ?? null,
    agents: Object.keys(domain.agents),
    concept_types: Object.keys(domain.conceptTypes),
    relationship_types: Object.keys(domain.relationshipTypes),
    relevance_rules: domain.relevanceRules.length,
    event_filters: domain.eventFilters.length,
    world_tables: Object.keys(domain.worldTables),
    world_watches: domain.worldWatches.length,
    /** Each declared tool with the agents granted it. */
    tools: toolGrants(domain),
    warnings,
  };
  const examples = values.intents ? await exampleReport(config, domain) : undefined;
  if (values.json) {
    process.stdout.write(`${JSON.stringify(examples ? { ...summary, intents: examples.check } : summary, null, 2)}\n`);
  } else {
    process.stdout.write(
      `config ok: ${summary.config}\n` +
        `data dir: ${summary.data_dir}\n` +
        `domain schema: ${summary.domain_schema ?? '(none; default personas)'}\n` +
        `agents (${summary.agents.length}): ${summary.agents.join(', ') || '-'}\n` +
        `concept types: ${summary.concept_types.join(', ') || '-'}; relationship types: ${summary.relationship_types.join(', ') || '-'}\n` +
        `relevance rules: ${summary.relevance_rules}; event filters: ${summary.event_filters}\n` +
        `world tables: ${summary.world_tables.join(', ') || '-'}; world watches: ${summary.world_watches}\n` +
        `tools (${Object.keys(summary.tools).length}): ${
          Object.entries(summary.tools)
            .map(([name, ids]) => `${name} (${ids.join(', ') || 'granted to nobody'})`)
            .join(', ') || '-'
        }\n` +
        (examples?.text ?? ''),
    );
  }
  return 0;
}
