import { checkExamples, type ExampleCheck } from '../agent/intents/example-check.js';
import { knownNames } from '../agent/intents/intent-acts.js';
import { customWordsModel, readWords } from '../agent/intents/words-model.js';
import type { ThymosConfig } from '../shared/config/index.js';
import { aliasTable, type DomainSchema } from '../shared/domain/index.js';

/** How many pairs of tools and calls of another tool the text lists (the JSON has them all). */
const LISTED = 10;

/**
 * `thymos validate --intents`: the domain's tools' examples, each resolved against the others as
 * an agent granted every tool resolves plain words offline (the same model, glossaries and names
 * of ids), and what that says, as text or as the JSON's `intents`. On words alone when no model
 * can be read, as an agent would, said on stderr.
 */
export async function exampleReport(
  config: ThymosConfig,
  domain: DomainSchema,
): Promise<{ check: ExampleCheck & { model: string | null }; text: string }> {
  // The whole model in memory, since every example is read.
  const words = readWords({ custom: customWordsModel(config), glossary: config.glossaryPath, resident: true });
  for (const w of words.warnings) process.stderr.write(`thymos: warning: ${w}\n`);
  const known = knownNames(aliasTable(domain));
  const check = {
    ...(await checkExamples(domain.tools, { embedder: words.embedder, glossary: words.glossary, known })),
    model: words.modelDir ?? null,
  };
  return { check, text: textOf(check) };
}

function textOf(c: ExampleCheck & { model: string | null }): string {
  const tools = `${c.tools} tool${c.tools === 1 ? '' : 's'}`;
  if (c.examples === 0) return `intents: no tool has examples to check (${tools})\n`;
  const pct = (n: number) => `${Math.round((1000 * n) / c.examples) / 10} %`;
  // Calls of a tool that writes first: those would change something.
  const calls = c.astray.filter((x) => x.call).sort((a, b) => Number(b.writes) - Number(a.writes));
  const lines = [
    `intents: ${c.examples} examples of ${tools}, each resolved against the others (${c.folds} folds${c.model ? '' : ', words only: no model could be read'}):`,
    `  own tool first ${pct(c.first)}; answered with it ${pct(c.ownTool)} (called ${pct(c.called)}), with another tool ${pct(c.astray.length)} (${calls.length} calls, ${calls.filter((x) => x.writes).length} of them to tools that write), with none ${pct(c.noTool)}`,
  ];
  if (c.confusable.length > 0)
    lines.push(
      `  told apart least: ${c.confusable
        .slice(0, LISTED)
        .map((p) => `${p.tools.join(' / ')} ${p.examples}`)
        .join(', ')}`,
    );
  if (calls.length > 0) lines.push('  examples that would call another tool:');
  for (const x of calls.slice(0, LISTED))
    lines.push(`    ${JSON.stringify(x.example)} (${x.tool}) → ${x.resolved}${x.writes ? ', which writes' : ''}`);
  if (calls.length > LISTED) lines.push(`    and ${calls.length - LISTED} more (--json lists them)`);
  return `${lines.join('\n')}\n`;
}
