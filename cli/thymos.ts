#!/usr/bin/env node
import { toThymosError } from '../shared/errors/errors.js';
import { ExitCode, exitCodeFor } from './exit-codes.js';

const HELP = `thymos — runs fleets of agents as processes

usage:
  thymos agent --agent-id ID --port N [--mode active|passive] [--context FILE] [--config FILE]
      Run one agent in the foreground: MCP on http://127.0.0.1:N/mcp, private memory
      under <data_dir>/agents/ID/, control on NATS when [nats] url is set.
  thymos up [--config FILE]
      Start the fleet under pm2 (PM2_HOME=<data_dir>/pm2): a nats-server when [nats] url
      is unset, then the supervisor. Returns when the supervisor answers.
  thymos down [--config FILE]
      Snapshot and stop every agent, then the supervisor, nats-server and pm2 daemon.
  thymos status [--json]
      Every agent: state, mode, pid, port, score, since, RSS.
  thymos reconcile --context FILE|- [--dry-run] [--json]
      Score every agent from a context and move the fleet to match; prints the report.
  thymos start ID [--mode active|passive] | stop ID | archive ID | restore ID [--json]
      One agent, one transition (pins and capacity still apply).
  thymos logs ID|supervisor|nats-server [--follow] [--lines N]
  thymos history ID [--lines N] [--json]
      The agent's last transitions.
  thymos url ID [--json]
      The MCP address of a running agent (http://127.0.0.1:PORT/mcp), for an MCP client.
      An agent keeps its port across wakes while it is free; pin one with [supervisor] agent_ports.
  thymos call ID TOOL ['{"arg":"value"}'] [--json]
      Call one MCP tool on a running agent.
  thymos publish TYPE ['{"summary":"…"}'] [--tags a,b] [--location L] [--mentions a,b] [--source S]
      Publish a world event; agents whose event filters match remember it (Dormant ones on waking).
  thymos world tables | get TABLE ID | set TABLE ID JSON | patch TABLE ID JSON | delete TABLE ID
  thymos world query TABLE [--where FIELD=VALUE]… [--order FIELD[:desc]] [--limit N] [--json]
      Read and write the shared world tables the Pkl schema declares (worldTables).
  thymos validate [--config FILE] [--json]
      Check thymos.toml and the Pkl domain schema it names.
  thymos supervisor [--config FILE] [--nats-url URL]
      Run the supervisor in the foreground (thymos up runs it under pm2).
  thymos spare --slot NAME --nats-url URL [--config FILE]
      A warm spare of the supervisor's pool ([supervisor] pool_size): waits for one claim,
      then runs that agent. The supervisor starts these under pm2.

  Every fleet command takes --config FILE (default: $THYMOS_CONFIG, else ./thymos.toml).
  thymos help | --help
  thymos version | --version

exit codes: 0 ok, 1 failure (a reconcile with any failed agent too), 2 bad arguments, config,
schema or context, 3 already running, port in use, agent pinned or capacity reached`;

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
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== undefined && Object.hasOwn(FLEET_COMMANDS, command)) return FLEET_COMMANDS[command]!(await import('./fleet-commands.js'), rest);
  switch (command) {
    case 'agent': {
      const { runAgentCommand } = await import('./agent-command.js');
      return runAgentCommand(rest);
    }
    case 'spare': {
      const { runSpareCommand } = await import('./spare-command.js');
      return runSpareCommand(rest);
    }
    case 'supervisor': {
      const { runSupervisorCommand } = await import('./supervisor-command.js');
      return runSupervisorCommand(rest);
    }
    case 'world': {
      const { runWorldCommand } = await import('./world-command.js');
      return runWorldCommand(rest);
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
