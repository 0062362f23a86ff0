import { parseArgs, type ParseArgsConfig } from 'node:util';

import { resolveConfigFile, type ThymosConfig } from '../shared/config/thymos-config.js';
import { ErrorCode, ThymosError } from '../shared/errors/errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface FleetArgs {
  config: ThymosConfig;
  json: boolean;
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/**
 * Parses a fleet command's arguments: `--config FILE` and `--json` for every command,
 * plus its own options and positionals. Errors are USAGE errors that quote the usage line.
 */
export function parseFleetArgs(argv: string[], usage: string, options: Options = {}, positionals: { min: number; max: number } = { min: 0, max: 0 }): FleetArgs {
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      options: { config: { type: 'string' }, json: { type: 'boolean' }, ...options },
      strict: true,
      allowPositionals: positionals.max > 0,
    }) as typeof parsed;
  } catch (err) {
    throw new ThymosError(ErrorCode.USAGE, `${(err as Error).message}\nusage: ${usage}`, { cause: err });
  }
  const n = parsed.positionals.length;
  if (n < positionals.min || n > positionals.max) {
    throw new ThymosError(ErrorCode.USAGE, `expected ${positionals.min === positionals.max ? positionals.min : `${positionals.min} to ${positionals.max}`} argument(s), got ${n}\nusage: ${usage}`);
  }
  return {
    config: resolveConfigFile(parsed.values.config as string | undefined),
    json: parsed.values.json === true,
    values: parsed.values,
    positionals: parsed.positionals,
  };
}
