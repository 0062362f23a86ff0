#!/usr/bin/env node
import { toThymosError } from '../shared/errors.js';
import { ExitCode, exitCodeFor } from './exit-codes.js';

const HELP = `thymos — runs fleets of agents as processes

usage:
  thymos agent --agent-id ID --port N [--mode active|passive] [--context FILE] [--config FILE]
      Run one agent in the foreground: MCP on http://127.0.0.1:N/mcp, private memory
      under <data_dir>/agents/ID/, control on NATS when [nats] url is set.
  thymos validate [--config FILE] [--json]
      Check thymos.toml and the Pkl domain schema it names.
  thymos help | --help
  thymos version | --version

exit codes: 0 ok, 1 failure, 2 bad arguments/config/schema, 3 agent already running or port in use`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'agent': {
      const { runAgentCommand } = await import('./agent-command.js');
      return runAgentCommand(rest);
    }
    case 'validate': {
      const { runValidateCommand } = await import('./validate-command.js');
      return runValidateCommand(rest);
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${HELP}\n`);
      return command === undefined ? ExitCode.BAD_INPUT : ExitCode.OK;
    case 'version':
    case '--version':
      process.stdout.write('0.1.0\n');
      return ExitCode.OK;
    default:
      process.stderr.write(`thymos: unknown command ${JSON.stringify(command)}\n\n${HELP}\n`);
      return ExitCode.BAD_INPUT;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // A long-running command (agent) returns -1 and exits on its own later.
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    const e = toThymosError(err);
    process.stderr.write(`thymos: ${e.code}: ${e.message}\n`);
    process.exit(exitCodeFor(e.code));
  },
);
