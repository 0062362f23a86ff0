#!/usr/bin/env node
import { ErrorCode, ExitCode, exitWithError, ThymosError, toThymosError } from '../shared/errors/index.js';
import { commandHelp, commandNamed, COMMANDS, globalHelp, suggest } from './command-book.js';

type FleetCommands = typeof import('./fleet-commands.js');

/** Commands that talk to a fleet; their module is loaded only when one of them runs. */
const FLEET_COMMANDS: Record<string, (c: FleetCommands, argv: string[]) => Promise<number>> = {
  up: (c, a) => c.runUpCommand(a),
  down: (c, a) => c.runDownCommand(a),
  status: (c, a) => c.runStatusCommand(a),
  reconcile: (c, a) => c.runReconcileCommand(a),
  start: (c, a) => c.runAgentOperationCommand('start', a),
  stop: (c, a) => c.runAgentOperationCommand('stop', a),
  archive: (c, a) => c.runAgentOperationCommand('archive', a),
  restore: (c, a) => c.runAgentOperationCommand('restore', a),
  logs: (c, a) => c.runLogsCommand(a),
  call: (c, a) => c.runCallCommand(a),
  url: (c, a) => c.runUrlCommand(a),
  publish: (c, a) => c.runPublishCommand(a),
  history: (c, a) => c.runHistoryCommand(a),
  tools: (c, a) => c.runToolsCommand(a),
};

/** Commands with a module of their own, loaded only when one of them runs. */
const OWN_MODULE_COMMANDS: Record<string, (argv: string[]) => Promise<number> | number> = {
  agent: async (a) => (await import('./agent-command.js')).runAgentCommand(a),
  spare: async (a) => (await import('./spare-command.js')).runSpareCommand(a),
  supervisor: async (a) => (await import('./supervisor-command.js')).runSupervisorCommand(a),
  world: async (a) => (await import('./world-command.js')).runWorldCommand(a),
  jobs: async (a) => (await import('./jobs-command.js')).runJobsCommand(a),
  top: async (a) => (await import('./top-command.js')).runTopCommand(a),
  init: async (a) => (await import('./init-command.js')).runInitCommand(a),
  validate: async (a) => (await import('./validate-command.js')).runValidateCommand(a),
  'nats-config': async (a) => (await import('./nats-config-command.js')).runNatsConfigCommand(a),
  reload: async (a) => (await import('./reload-command.js')).runReloadCommand(a),
  setup: async (a) => (await import('./setup-command.js')).runSetupCommand(a),
  glossary: async (a) => (await import('./glossary-command.js')).runGlossaryCommand(a),
  completion: async (a) => (await import('./completion.js')).runCompletionCommand(a),
  approvals: async (a) => (await import('./approvals-command.js')).runApprovalsCommand(a),
  approve: async (a) => (await import('./approvals-command.js')).runDecideCommand('approve', a),
  refuse: async (a) => (await import('./approvals-command.js')).runDecideCommand('refuse', a),
};

/** `--help` or `-h` among a command's arguments (before a `--`). */
function asksForHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** An unknown command, or one asked about with `help`, with the nearest command named. */
function unknownCommand(name: string): ThymosError {
  const near = suggest(
    name,
    COMMANDS.map((c) => c.name),
  );
  return new ThymosError(
    ErrorCode.USAGE,
    `unknown command ${JSON.stringify(name)}${near ? `; did you mean ${near}?` : ''}\nthymos help lists the commands`,
  );
}

/** A parse error for an unknown option gets the nearest option of the command. */
function withOptionSuggestion(err: ThymosError, command: string | undefined): ThymosError {
  const spec = command === undefined ? undefined : commandNamed(command);
  const unknown = /Unknown option '(-{1,2}[^']+)'/.exec(err.message)?.[1];
  if (!spec || !unknown || err.code !== ErrorCode.USAGE) return err;
  const near = suggest(unknown.replace(/^-+/, ''), Object.keys(spec.options));
  if (!near) return err;
  return new ThymosError(
    err.code,
    err.message.replace(`Unknown option '${unknown}'`, `Unknown option '${unknown}' (did you mean --${near}?)`),
  );
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== undefined && !command.startsWith('-') && asksForHelp(rest)) {
    const spec = commandNamed(command);
    if (!spec) throw unknownCommand(command);
    process.stdout.write(`${commandHelp(spec)}\n`);
    return ExitCode.OK;
  }
  if (command !== undefined && Object.hasOwn(FLEET_COMMANDS, command))
    return FLEET_COMMANDS[command]!(await import('./fleet-commands.js'), rest);
  if (command !== undefined && Object.hasOwn(OWN_MODULE_COMMANDS, command)) return OWN_MODULE_COMMANDS[command]!(rest);
  switch (command) {
    case 'help': {
      const [about, ...extra] = rest;
      if (extra.length > 0) throw new ThymosError(ErrorCode.USAGE, 'usage: thymos help [COMMAND]');
      if (about === undefined) {
        process.stdout.write(`${globalHelp()}\n`);
        return ExitCode.OK;
      }
      const spec = commandNamed(about);
      if (!spec) throw unknownCommand(about);
      process.stdout.write(`${commandHelp(spec)}\n`);
      return ExitCode.OK;
    }
    case undefined:
    case '--help':
    case '-h':
      process.stdout.write(`${globalHelp()}\n`);
      return command === undefined ? ExitCode.BAD_INPUT : ExitCode.OK;
    case 'version':
    case '--version':
      process.stdout.write('0.1.0\n');
      return ExitCode.OK;
    default:
      throw unknownCommand(command);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // A long-running command (agent) returns -1 and exits on its own later. The others exit once
    // what they wrote has gone out: a pipe takes a long listing in pieces, and exiting first cuts it.
    if (code >= 0) process.stdout.write('', () => process.exit(code));
  },
  (err: unknown) => exitWithError(withOptionSuggestion(toThymosError(err), process.argv[2])),
);
