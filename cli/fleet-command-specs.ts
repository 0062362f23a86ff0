import { type CommandSpec, configOption, fleetOptions, linesOption, strictOption } from './command-spec.js';

const ONE_AGENT = 'One agent, one transition; pins and capacity still apply.';

/** Running the fleet and its agents: up, down, status, top, reconcile, one agent's moves, logs and history. */
export const FLEET_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'up',
    args: '',
    summary: 'Start the fleet under pm2: a nats-server (unless [nats] url is set), then the supervisor',
    details:
      'pm2 runs with PM2_HOME=<data_dir>/pm2. The config and the domain are checked first (exit 2) and a NATS port another process holds is PORT_IN_USE (exit 3), so nothing starts; a process that exits while starting fails up with its own error and what up started is stopped. Returns when the supervisor answers; exits 3 if the fleet is already running.',
    options: { ...fleetOptions, strict: strictOption },
    examples: ['thymos up', 'thymos up --config ops/thymos.toml', 'thymos up --strict'],
  },
  {
    name: 'down',
    args: '',
    summary: 'Snapshot and stop every agent, then the supervisor, nats-server and the pm2 daemon',
    options: fleetOptions,
    examples: ['thymos down'],
  },
  {
    name: 'status',
    args: '',
    summary: 'Every agent: state, mode, pid, port, score, since, RSS',
    options: fleetOptions,
    examples: ['thymos status', 'thymos status --json'],
  },
  {
    name: 'top',
    args: '',
    summary: 'The fleet, live: state, mode, score, pid, port, PSS, CPU, restarts, last move and events per second',
    details:
      'Redraws every --interval on the terminal until q (or Ctrl-C). Keys sort: c cpu, m memory, e events, p score, s state, i id. PSS and CPU are read from /proc on Linux (elsewhere they show -, and RSS comes from pm2). Events per second are the world events routed to the agent. Without a terminal, or with --once, it prints one frame measured over one interval (--json: its rows).',
    options: {
      interval: { type: 'string', value: 'MS', help: 'time between frames, 200 to 60000 (default: 1000)' },
      sort: { type: 'string', value: 'KEY', help: 'cpu, memory, events, score, state or id (default: cpu)' },
      once: { type: 'boolean', help: 'print one frame and exit' },
      ...fleetOptions,
    },
    examples: ['thymos top', 'thymos top --sort memory --interval 2000', 'thymos top --once'],
  },
  {
    name: 'reconcile',
    args: '',
    summary: 'Score every agent from a context and move the fleet to match; prints what changed',
    details:
      'Context properties that no relevance rule uses and contextProperties does not declare are warnings on stderr (and warnings in --json): likely typos.',
    options: {
      context: { type: 'string', value: 'FILE|-', required: true, help: 'the context as JSON: a file, or - for stdin (required)' },
      'dry-run': { type: 'boolean', help: 'say what would change, change nothing' },
      strict: { type: 'boolean', help: 'a context property nothing declares or uses is an error (INVALID_CONTEXT, exit 2), not a warning' },
      ...fleetOptions,
    },
    examples: [
      'thymos reconcile --context context.json',
      `echo '{"global":{"player_location":"tavern"}}' | thymos reconcile --context - --dry-run`,
      'thymos reconcile --context context.json --strict',
    ],
  },
  {
    name: 'start',
    args: 'ID',
    summary: 'Start one agent (Active, or Listening with --mode passive)',
    details: ONE_AGENT,
    options: { mode: { type: 'string', value: 'active|passive', help: 'how it runs (default: active)' }, ...fleetOptions },
    examples: ['thymos start elder_rowan', 'thymos start bram_smith --mode passive'],
  },
  {
    name: 'stop',
    args: 'ID',
    summary: 'Snapshot and stop one agent (Dormant)',
    details: ONE_AGENT,
    options: fleetOptions,
    examples: ['thymos stop elder_rowan'],
  },
  {
    name: 'archive',
    args: 'ID',
    summary: 'Archive one agent: stopped, its folder packed into data/archive/<id>.tar.gz',
    details: ONE_AGENT,
    options: fleetOptions,
    examples: ['thymos archive mira_herbalist'],
  },
  {
    name: 'restore',
    args: 'ID',
    summary: 'Unpack an archived agent: Dormant again, memory intact',
    details: ONE_AGENT,
    options: fleetOptions,
    examples: ['thymos restore mira_herbalist'],
  },
  {
    name: 'logs',
    args: 'ID|supervisor|nats-server',
    summary: "Print a process's log readably (an agent's, the supervisor's or nats-server's), or the whole fleet's with --all",
    details:
      'Lines are shown through pino-pretty, one a line, coloured on a terminal (NO_COLOR turns colours off); --json prints them as written. With --all every log in <data_dir>/logs is read, merged by time and each line labelled with its process; with --follow, agents started later are followed too.',
    options: {
      follow: { type: 'boolean', short: 'f', help: 'keep printing what is written' },
      lines: linesOption('lines to print first, of each log (default: 50)'),
      all: { type: 'boolean', help: 'every process of the fleet, each line labelled with its name' },
      json: { type: 'boolean', help: 'the lines as written (pino JSON), not made readable' },
      config: configOption,
    },
    examples: [
      'thymos logs elder_rowan --follow',
      'thymos logs supervisor -n 200',
      'thymos logs --all -f',
      'thymos logs bram_smith --json | jq .msg',
    ],
  },
  {
    name: 'history',
    args: 'ID',
    summary: "The agent's last transitions, kept in the registry",
    options: { lines: linesOption('transitions to print, 1 to 1000 (default: 20)'), ...fleetOptions },
    examples: ['thymos history elder_rowan --lines 5'],
  },
];

/** The fleet's processes run in the foreground, as pm2 and the supervisor start them: agent, supervisor, spare. */
export const PROCESS_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'agent',
    args: '',
    summary: 'Run one agent in the foreground (the supervisor runs agents for you)',
    details: 'MCP on http://127.0.0.1:PORT/mcp, private memory under <data_dir>/agents/ID/, control on NATS when [nats] url is set.',
    options: {
      'agent-id': { type: 'string', value: 'ID', required: true, help: 'the agent to run (required)' },
      port: { type: 'string', value: 'N', required: true, help: 'its MCP port on 127.0.0.1 (required)' },
      mode: { type: 'string', value: 'active|passive', help: 'how it runs (default: active)' },
      context: { type: 'string', value: 'FILE', help: 'a start context as JSON' },
      config: configOption,
      'nats-url': { type: 'string', value: 'URL', help: 'the NATS server to use instead of [nats] url' },
    },
    examples: ['thymos agent --agent-id elder_rowan --port 7401'],
  },
  {
    name: 'supervisor',
    args: '',
    summary: 'Run the supervisor in the foreground (thymos up runs it under pm2)',
    options: {
      config: configOption,
      'nats-url': { type: 'string', value: 'URL', help: 'the NATS server to use instead of the fleet one' },
    },
    examples: ['thymos supervisor --nats-url nats://127.0.0.1:4222'],
  },
  {
    name: 'spare',
    args: '',
    summary: "A warm spare of the supervisor's pool ([supervisor] pool_size); the supervisor starts these",
    details: 'Waits for one claim, then runs that agent.',
    options: {
      slot: { type: 'string', value: 'NAME', required: true, help: 'its slot in the pool: letters, digits and - (required)' },
      'nats-url': { type: 'string', value: 'URL', required: true, help: 'the NATS server its claim comes on (required)' },
      config: configOption,
    },
    examples: ['thymos spare --slot 1 --nats-url nats://127.0.0.1:4222'],
  },
];
