/** One option of a command, as `node:util` parseArgs takes it, with what it is for. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** The value's placeholder in help: FILE, N, URL… */
  value?: string;
  /** Shown without brackets in the usage line. */
  required?: boolean;
  help: string;
}

/** A `thymos` command: what it takes, what it does, and an example, for its help, suggestions and completion. */
export interface CommandSpec {
  name: string;
  /** What follows the name besides options, e.g. `ID TOOL [JSON]`. */
  args: string;
  summary: string;
  /** More lines for `thymos help CMD`. */
  details?: string;
  options: Record<string, OptionSpec>;
  examples: string[];
}

/** `--config FILE`, which every command that reads the project takes. */
export const configOption: OptionSpec = {
  type: 'string',
  value: 'FILE',
  help: 'the thymos.toml to use (default: $THYMOS_CONFIG, else ./thymos.toml)',
};
/** `--json`, for a command whose output a program reads. */
export const jsonOption: OptionSpec = { type: 'boolean', help: 'print JSON instead of text' };
/** What every command that talks to a fleet takes. */
export const fleetOptions = { config: configOption, json: jsonOption };
/** `--strict`, for a command that checks the config. */
export const strictOption: OptionSpec = { type: 'boolean', help: 'treat warnings (an unset api_key_env variable) as errors: exit 2' };
/** `-n N`, how many lines of something to print. */
export const linesOption = (what: string): OptionSpec => ({ type: 'string', short: 'n', value: 'N', help: what });
