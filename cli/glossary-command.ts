import { buildGlossaries } from '../agent/intents/glossary-build.js';
import { glossaryDir, resolveConfigFile } from '../shared/config/index.js';
import { commandNamed } from './command-book.js';
import { parseCommandArgs } from './fleet-args.js';

/**
 * `thymos glossary`: builds the glossaries through which the offline intent resolver reads
 * French, Spanish and German, from the FreeDict dictionaries this machine has, into `--out`,
 * else the config's `[tools] glossary_dir`, else models/glossary of the Thymos install. Every
 * agent started afterwards with that config reads them.
 */
export function runGlossaryCommand(argv: string[]): number {
  const { values } = parseCommandArgs(argv, commandNamed('glossary')!) as {
    values: { from?: string; out?: string; config?: string; json?: boolean };
  };
  const from = values.from ?? '/usr/share/dictd';
  const out = values.out ?? resolveConfigFile(values.config).glossaryPath ?? glossaryDir();
  const started = performance.now();
  const built = buildGlossaries(from, out);
  if (values.json) process.stdout.write(`${JSON.stringify({ glossary: out, words: built })}\n`);
  else
    process.stdout.write(
      `built ${out} (${Object.entries(built)
        .map(([l, n]) => `${l}: ${n} words`)
        .join(', ')}) in ${Math.round(performance.now() - started)} ms\n`,
    );
  return 0;
}
