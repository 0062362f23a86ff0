import { parseArgs, type ParseArgsConfig } from 'node:util';

import { resolveConfigFile, type ThymosConfig } from '../shared/config/index.js';
import { AgentIdSchema } from '../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../shared/errors/index.js';
import { usageLine } from './command-book.js';
import type { CommandSpec } from './command-spec.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface FleetArgs {
  config: ThymosConfig;
  json: boolean;
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/**
 * Parses a command's arguments against its entry in the command book and counts its
 * positionals. Errors are USAGE errors that quote the usage line. `only` narrows the options
 * (a `world` subcommand takes some of them; `--config` and `--json` always).
 */
export function parseCommandArgs(
  argv: string[],
  spec: CommandSpec,
  positionals: { min: number; max: number } = { min: 0, max: 0 },
  only?: readonly string[],
): Omit<FleetArgs, 'config' | 'json'> {
  const usage = usageLine(spec);
  const options: Options = {};
  for (const [name, o] of Object.entries(spec.options)) {
    if (only && !only.includes(name) && name !== 'config' && name !== 'json') continue;
    options[name] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  }
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: positionals.max > 0 }) as typeof parsed;
  } catch (err) {
    throw new ThymosError(ErrorCode.USAGE, `${(err as Error).message}\nusage: ${usage}`, { cause: err });
  }
  const n = parsed.positionals.length;
  if (n < positionals.min || n > positionals.max) {
    throw new ThymosError(
      ErrorCode.USAGE,
      `expected ${positionals.min === positionals.max ? positionals.min : `${positionals.min} to ${positionals.max}`} argument(s), got ${n}\nusage: ${usage}`,
    );
  }
  return parsed;
}

/** `parseCommandArgs` for a command that talks to a fleet: its config file resolved, `--json` read. */
export function parseFleetArgs(
  argv: string[],
  spec: CommandSpec,
  positionals: { min: number; max: number } = { min: 0, max: 0 },
  only?: readonly string[],
): FleetArgs {
  const parsed = parseCommandArgs(argv, spec, positionals, only);
  return { ...parsed, config: resolveConfigFile(parsed.values.config as string | undefined), json: parsed.values.json === true };
}

/** An agent id from the command line; a USAGE error quoting `usage` otherwise. */
export function parseId(raw: string, usage: string): string {
  const r = AgentIdSchema.safeParse(raw);
  if (!r.success)
    throw new ThymosError(
      ErrorCode.USAGE,
      `ID: expected an agent id (lower-case letters, digits, _), got ${JSON.stringify(raw)}\nusage: ${usage}`,
    );
  return r.data;
}
