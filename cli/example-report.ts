import { checkExamples, customWordsModel, type ExampleCheck, Glossary, wordsModelDir } from '../agent/intents/index.js';
import type { ThymosConfig } from '../shared/config/thymos-config.js';
import type { Tools } from '../shared/domain/tool-schema.js';
import { StaticEmbedder } from '../shared/platform/static-embedder.js';
import { glossaryDir } from '../shared/platform/thymos-root.js';

/** How many pairs of tools and calls of another tool the text lists (the JSON has them all). */
const LISTED = 10;

/**
 * `thymos validate --intents`: the domain's tools' examples, each resolved against the others as
 * an agent granted every tool resolves plain words offline (the same model and glossaries), and
 * what that says, as text or as the JSON's `intents`. `words only` when the offline model cannot
 * be read, as an agent would.
 */
export async function exampleReport(config: ThymosConfig, tools: Tools): Promise<{ check: ExampleCheck & { model: string | null }; text: string }> {
  let embedder: StaticEmbedder | undefined;
  const dir = wordsModelDir(customWordsModel(config));
  try {
    embedder = StaticEmbedder.load(dir, { maxLength: 256, resident: false });
  } catch {
    embedder = undefined;
  }
  const glossary = Glossary.load(config.glossaryPath ?? glossaryDir(), embedder && (() => embedder.wordsByFrequency()));
  const check = { ...(await checkExamples(tools, { embedder, glossary })), model: embedder ? dir : null };
  return { check, text: textOf(check) };
}

function textOf(c: ExampleCheck & { model: string | null }): string {
  if (c.examples === 0) return `intents: no tool has examples to check (${c.tools} tools)\n`;
  const pct = (n: number) => `${Math.round((1000 * n) / c.examples) / 10} %`;
  // Calls of a tool that writes first: those would change something.
  const calls = c.astray.filter((x) => x.call).sort((a, b) => Number(b.writes) - Number(a.writes));
  const lines = [
    `intents: ${c.examples} examples of ${c.tools} tools, each resolved against the others (${c.folds} folds${c.model ? '' : ', words only: the offline model could not be read'}):`,
    `  own tool first ${pct(c.first)}; answered with it ${pct(c.ownTool)} (called ${pct(c.called)}); with another tool ${pct(c.astray.length)} (${calls.length} calls, ${calls.filter((x) => x.writes).length} of them to tools that write)`,
  ];
  if (c.confusable.length > 0) lines.push(`  told apart least: ${c.confusable.slice(0, LISTED).map((p) => `${p.tools.join(' / ')} ${p.examples}`).join(', ')}`);
  if (calls.length > 0) lines.push('  examples that would call another tool:');
  for (const x of calls.slice(0, LISTED)) lines.push(`    ${JSON.stringify(x.example)} (${x.tool}) → ${x.resolved}${x.writes ? ', which writes' : ''}`);
  if (calls.length > LISTED) lines.push(`    and ${calls.length - LISTED} more (--json lists them)`);
  return `${lines.join('\n')}\n`;
}
