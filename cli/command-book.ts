import { closest, distance } from 'fastest-levenshtein';

import type { CommandSpec } from './command-spec.js';
import { FLEET_COMMANDS, PROCESS_COMMANDS } from './fleet-command-specs.js';
import { DOMAIN_COMMANDS, PROJECT_COMMANDS } from './project-command-specs.js';
import { TOOL_COMMANDS } from './tool-command-specs.js';
import { WORLD_COMMANDS } from './world-command-specs.js';

/** Every command, in the order the global help lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  ...PROJECT_COMMANDS,
  ...FLEET_COMMANDS,
  ...TOOL_COMMANDS,
  ...WORLD_COMMANDS,
  ...DOMAIN_COMMANDS,
  ...PROCESS_COMMANDS,
  {
    name: 'completion',
    args: 'bash|zsh',
    summary: 'Print a shell completion script for commands and their options',
    options: {},
    examples: [
      'source <(thymos completion bash)            # in ~/.bashrc',
      'thymos completion zsh > "${fpath[1]}/_thymos"   # then restart zsh',
    ],
  },
  {
    name: 'help',
    args: '[COMMAND]',
    summary: "This list, or one command's options and examples",
    options: {},
    examples: ['thymos help call'],
  },
  { name: 'version', args: '', summary: 'Print the version', options: {}, examples: ['thymos version'] },
];

export function commandNamed(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** The nearest of `candidates` to a mistyped `word`, when it is near enough to be what was meant. */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0 || word === '') return undefined;
  const best = closest(word, [...candidates]);
  const d = distance(word, best);
  return d > 0 && (d <= Math.max(1, Math.floor(best.length / 3)) || best.startsWith(word)) ? best : undefined;
}

/** `thymos NAME ARGS [--option VALUE]…` */
export function usageLine(spec: CommandSpec): string {
  const options = Object.entries(spec.options).map(([name, o]) => {
    const flag = `--${name}${o.value ? ` ${o.value}` : ''}`;
    return `${o.required ? flag : `[${flag}]`}${o.multiple ? '…' : ''}`;
  });
  return ['thymos', spec.name, spec.args, ...options].filter(Boolean).join(' ');
}

/** What `thymos CMD --help` and `thymos help CMD` print. */
export function commandHelp(spec: CommandSpec): string {
  const options = Object.entries(spec.options).map(([name, o]) => [
    `${o.short ? `-${o.short}, ` : ''}--${name}${o.value ? ` ${o.value}` : ''}`,
    o.help,
  ]);
  const width = Math.max(0, ...options.map(([flag]) => flag!.length));
  return [
    `usage: ${usageLine(spec)}`,
    '',
    `${spec.summary}.`,
    ...(spec.details ? [spec.details] : []),
    ...(options.length ? ['', 'options:', ...options.map(([flag, help]) => `  ${flag!.padEnd(width)}  ${help}`)] : []),
    '',
    spec.examples.length > 1 ? 'examples:' : 'example:',
    ...spec.examples.map((e) => `  ${e}`),
  ].join('\n');
}

/** What `thymos help` prints. */
export function globalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'thymos — runs fleets of agents as processes',
    '',
    'usage: thymos COMMAND [ARGS] [OPTIONS]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "`thymos help COMMAND` or `thymos COMMAND --help` shows a command's arguments, options and an example.",
    'Every fleet command takes --config FILE (default: $THYMOS_CONFIG, else ./thymos.toml).',
    '',
    'exit codes: 0 ok, 1 failure (a reconcile with any failed agent too), 2 bad arguments, config,',
    'schema, context or tool arguments, 3 already running, port in use, agent pinned or capacity reached',
  ].join('\n');
}
