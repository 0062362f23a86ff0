import { closest, distance } from 'fastest-levenshtein';

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

const config: OptionSpec = { type: 'string', value: 'FILE', help: 'the thymos.toml to use (default: $THYMOS_CONFIG, else ./thymos.toml)' };
const json: OptionSpec = { type: 'boolean', help: 'print JSON instead of text' };
const fleet = { config, json };
const strict: OptionSpec = { type: 'boolean', help: 'treat warnings (an unset api_key_env variable) as errors: exit 2' };
const lines = (what: string): OptionSpec => ({ type: 'string', short: 'n', value: 'N', help: what });

const ONE_AGENT = 'One agent, one transition; pins and capacity still apply.';

/** Every command, in the order the global help lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'init',
    args: '[DIR]',
    summary: 'Start a project in DIR (default: here): thymos.toml, a Pkl domain, a context and a loop script',
    details:
      'Writes thymos.toml, world.pkl (amending the installed schemas/Thymos.pkl by a path that works from DIR), context.json, loop.mjs, README.md and .gitignore. Never overwrites: a folder that has any of them is FILE_EXISTS (exit 3) and nothing is written.',
    options: { json },
    examples: ['thymos init', 'thymos init my-town'],
  },
  {
    name: 'setup',
    args: '',
    summary: 'Check and install what the fleet needs from this machine: nats-server, unless [nats] url is set',
    details:
      'Run as root on Debian or Ubuntu, a missing nats-server is installed from the Debian package (apt-get), said before it is. As a plain user, on macOS or without apt, nothing is installed: NATS_SERVER_MISSING names the command to run (sudo apt-get install nats-server, brew install nats-server) or [nats] url, exit 4. Installs nothing when nats-server is there.',
    options: fleet,
    examples: ['thymos setup', 'sudo npx thymos setup', 'thymos setup --config examples/village/thymos.toml --json'],
  },
  {
    name: 'glossary',
    args: '',
    summary: 'Build the glossaries through which plain-words intents in French, Spanish and German are read',
    details:
      'Reads the FreeDict dictionaries (freedict-fra-eng, -spa-eng, -deu-eng in dictd\'s format, and freedict-eng-fra and the like backwards; Debian: apt-get install dict-freedict-fra-eng dict-freedict-spa-eng dict-freedict-deu-eng) and writes, for each, its words and their English into --out, the config\'s [tools] glossary_dir, or models/glossary of the Thymos install (which a reinstall removes), replacing what was there; agents started afterwards with that config read an intent in those languages through them (README: "Plain words"). The dictionaries are GPL-licensed and stay on this machine. None found: NOT_FOUND (exit 2), nothing changed; a folder it cannot write: WRITE_FAILED (exit 1), the glossary there left as it was.',
    options: {
      from: { type: 'string', value: 'DIR', help: 'where the dictionaries are (default: /usr/share/dictd)' },
      out: {
        type: 'string',
        value: 'DIR',
        help: "where to build the glossaries (default: the config's [tools] glossary_dir, else models/glossary of the Thymos install)",
      },
      ...fleet,
    },
    examples: ['thymos glossary', 'thymos glossary --from ~/freedict --out glossary --json'],
  },
  {
    name: 'up',
    args: '',
    summary: 'Start the fleet under pm2: a nats-server (unless [nats] url is set), then the supervisor',
    details:
      'pm2 runs with PM2_HOME=<data_dir>/pm2. The config and the domain are checked first (exit 2) and a NATS port another process holds is PORT_IN_USE (exit 3), so nothing starts; a process that exits while starting fails up with its own error and what up started is stopped. Returns when the supervisor answers; exits 3 if the fleet is already running.',
    options: { ...fleet, strict },
    examples: ['thymos up', 'thymos up --config ops/thymos.toml', 'thymos up --strict'],
  },
  {
    name: 'down',
    args: '',
    summary: 'Snapshot and stop every agent, then the supervisor, nats-server and the pm2 daemon',
    options: fleet,
    examples: ['thymos down'],
  },
  {
    name: 'status',
    args: '',
    summary: 'Every agent: state, mode, pid, port, score, since, RSS',
    options: fleet,
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
      ...fleet,
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
      ...fleet,
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
    options: { mode: { type: 'string', value: 'active|passive', help: 'how it runs (default: active)' }, ...fleet },
    examples: ['thymos start elder_rowan', 'thymos start bram_smith --mode passive'],
  },
  {
    name: 'stop',
    args: 'ID',
    summary: 'Snapshot and stop one agent (Dormant)',
    details: ONE_AGENT,
    options: fleet,
    examples: ['thymos stop elder_rowan'],
  },
  {
    name: 'archive',
    args: 'ID',
    summary: 'Archive one agent: stopped, its folder packed into data/archive/<id>.tar.gz',
    details: ONE_AGENT,
    options: fleet,
    examples: ['thymos archive mira_herbalist'],
  },
  {
    name: 'restore',
    args: 'ID',
    summary: 'Unpack an archived agent: Dormant again, memory intact',
    details: ONE_AGENT,
    options: fleet,
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
      lines: lines('lines to print first, of each log (default: 50)'),
      all: { type: 'boolean', help: 'every process of the fleet, each line labelled with its name' },
      json: { type: 'boolean', help: 'the lines as written (pino JSON), not made readable' },
      config,
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
    options: { lines: lines('transitions to print, 1 to 1000 (default: 20)'), ...fleet },
    examples: ['thymos history elder_rowan --lines 5'],
  },
  {
    name: 'url',
    args: 'ID',
    summary:
      'The MCP address of a running agent (http://127.0.0.1:PORT/mcp), for an MCP client; with --header, the Authorization header it asks for',
    details:
      'An agent keeps its port across wakes while it is free; pin one with [supervisor] agent_ports. With --header, prints "Authorization: Bearer <token>" alone, read from data/agents/ID/mcp-token (with [mcp] require_token = false there is none: exit 2).',
    options: { header: { type: 'boolean', help: 'print the Authorization header the agent asks for instead of its address' }, ...fleet },
    examples: [
      'thymos url elder_rowan',
      'npx @modelcontextprotocol/inspector --cli "$(thymos url elder_rowan)" --header "$(thymos url elder_rowan --header)" --method tools/list',
    ],
  },
  {
    name: 'tools',
    args: 'ID',
    summary: "A running agent's MCP tools: name, what it does, its arguments (* required)",
    options: fleet,
    examples: ['thymos tools elder_rowan', 'thymos tools elder_rowan --json'],
  },
  {
    name: 'call',
    args: 'ID TOOL [\'{"arg":"value"}\']',
    summary: 'Call one MCP tool on a running agent and print its answer',
    details:
      "Arguments are one JSON object. A tool name the agent does not have, or arguments its schema refuses, exit 2 with what it expects (see thymos tools ID). talk_to_ID prints the reply as the agent's model writes it (not with --json).",
    options: fleet,
    examples: [
      `thymos call elder_rowan talk_to_elder_rowan '{"message":"Who tends the mill?","speaker":"player"}'`,
      `thymos call bram_smith recall '{"query":"wolves"}' --json`,
    ],
  },
  {
    name: 'approvals',
    args: '[ID]',
    summary: 'The tool calls waiting for a person to approve them (tools of permission "confirm"), of one agent or all',
    details:
      'A call waits until it is approved or refused (thymos approve, thymos refuse) or its [tools] approval_timeout_s passes, counted while its agent is Dormant too; then it is refused. A call a crash cut off while it ran, whose service does not honour its idempotency key, is listed again as interrupted (INTERRUPTED: when): did it take effect? Approve runs it again, approve --done records that it did, refuse leaves it.',
    options: fleet,
    examples: ['thymos approvals', 'thymos approvals billing_desk --json'],
  },
  {
    name: 'approve',
    args: 'ID CALL',
    summary: 'Approve a pending tool call: the agent runs it now, or when it next wakes',
    details:
      "Decided as the fleet's approver, with its own NATS key (<data_dir>/secrets/nats/approver.nk, made by thymos up; approver.creds with [nats] credentials), which the client's key cannot stand in for. The decision is audited as by approver, with why (<data_dir>/logs/audit.jsonl). Nobody approves a call they made: one made by this same process is TOOL_DENIED. For a call listed as interrupted, --done says it took effect: it is recorded ok and not run again.",
    options: {
      reason: { type: 'string', value: 'TEXT', required: true, help: 'why, for the audit log' },
      done: { type: 'boolean', help: 'an interrupted call took effect: record it done, do not run it again' },
      ...fleet,
    },
    examples: [
      'thymos approve billing_desk 6f1c… --reason "refund checked with the customer"',
      'thymos approve billing_desk 6f1c… --done --reason "the refund shows in the bank\'s ledger"',
    ],
  },
  {
    name: 'refuse',
    args: 'ID CALL',
    summary: 'Refuse a pending tool call: it never runs, and its caller finds it refused',
    details: 'Audited like approve.',
    options: { reason: { type: 'string', value: 'TEXT', required: true, help: 'why, for the audit log and the caller' }, ...fleet },
    examples: ['thymos refuse billing_desk 6f1c… --reason "over the refund limit"'],
  },
  {
    name: 'publish',
    args: 'TYPE [\'{"summary":"…"}\']',
    summary: 'Publish a world event; agents whose event filters match remember it (Dormant ones on waking)',
    options: {
      tags: { type: 'string', value: 'a,b', help: 'tags the event carries' },
      location: { type: 'string', value: 'L', help: 'where it happened' },
      mentions: { type: 'string', value: 'a,b', help: 'agents it names' },
      source: { type: 'string', value: 'S', help: 'who published it (default: game)' },
      id: { type: 'string', value: 'ID', help: 'its id: an event published twice with one id is kept once' },
      ...fleet,
    },
    examples: [
      `thymos publish tavern.brawl '{"summary":"A brawl broke out at the Drowned Lantern"}' --location tavern --mentions bram_smith`,
    ],
  },
  {
    name: 'jobs',
    args: 'publish QUEUE SKILL [\'{"order_id":"…"}\'] | ls [QUEUE] | dead [QUEUE] | requeue SEQ',
    summary: "The work queues: publish a job for a skill, see each skill's backlog, the dead letters, and put one back",
    details:
      "A job published twice with one --id within an hour is one job. ls shows what waits, what is being worked, the oldest job's age and whether an agent has the skill.",
    options: {
      id: { type: 'string', value: 'ID', help: "publish only: the job's id (letters, digits, _ . : -); made up when left out" },
      limit: { type: 'string', value: 'N', help: 'dead only: the newest N letters (default 50)' },
      ...fleet,
    },
    examples: [
      `thymos jobs publish support billing '{"ticket":"T-1001","text":"I was charged twice"}' --id T-1001`,
      'thymos jobs ls',
      'thymos jobs dead support',
      'thymos jobs requeue 12',
    ],
  },
  {
    name: 'world',
    args: 'tables | get TABLE ID | set TABLE ID JSON | patch TABLE ID JSON | delete TABLE ID | query TABLE',
    summary: 'Read and write the shared world tables the Pkl schema declares (worldTables)',
    details:
      'query takes --where FIELD OP VALUE with OP one of = != < <= > >= ~ (~ is contains), or a JSON condition\n' +
      'such as \'{"field":"status","op":"in","value":["open","taken"]}\'; --order FIELD[:desc]; --limit N.',
    options: {
      where: { type: 'string', multiple: true, value: 'FIELD=VALUE', help: 'query only: a condition, repeatable' },
      order: { type: 'string', value: 'FIELD[:desc]', help: 'query only: the order of the rows' },
      limit: { type: 'string', value: 'N', help: 'query only: rows at most' },
      ...fleet,
    },
    examples: [
      'thymos world tables',
      `thymos world set quest wolves '{"title":"Wolves at the mill","status":"open"}'`,
      'thymos world query quest --where status=open --order title',
    ],
  },
  {
    name: 'validate',
    args: '',
    summary: 'Check thymos.toml and the Pkl domain schema it names; prints what they define',
    details:
      "Warnings (an api_key_env variable unset in this environment) go to stderr and into the JSON as warnings; with --strict they are errors. With --intents, each tool's examples are resolved against the others as an agent granted every tool resolves plain words offline (resolve_intent, act): how many go to their own tool, which tools are told apart least, and which examples would call another tool. Nothing runs; it reports and does not fail.",
    options: {
      ...fleet,
      strict,
      intents: {
        type: 'boolean',
        help: "also resolve each tool's examples against the others, offline, and say which would go to another tool",
      },
    },
    examples: [
      'thymos validate',
      'thymos validate --config examples/village/thymos.toml --json',
      'thymos validate --strict',
      'thymos validate --intents',
    ],
  },
  {
    name: 'reload',
    args: '',
    summary:
      'Apply an edited domain schema to the running fleet: agents added get their NATS identity, agents removed are stopped and lose theirs',
    details:
      "Evaluates and checks the domain first (a bad one changes nothing), stops through the supervisor the agents it no longer names that run (a snapshot; their data stays), then restarts the supervisor on the new domain, which makes the identities of added agents, deletes those of removed ones and has the managed nats-server reload its users: a removed agent's key is refused from then on. Prints what changed. With [nats] url and [nats] identities, the server is yours: it writes data/run/nats-users.conf, and until that server admits every added agent says to reload it (nats-server --signal reload) and exits 1, changing nothing else. thymos up on a running fleet only says it runs.",
    options: fleet,
    examples: ['thymos reload', 'thymos reload --json'],
  },
  {
    name: 'nats-config',
    args: '',
    summary: "Make the fleet's NATS identities and write the users a nats-server you run ([nats] url) includes",
    details:
      "Makes a key (data/secrets/nats/, mode 0600) for the supervisor, the client, the spares and each agent of the domain that has none, deletes those of agents gone from the domain (with a domain schema), and writes their users and permissions, public keys only, to data/run/nats-users.conf (mode 0644). Add the include line it prints to the server's configuration, reload it, and set [nats] identities = true; thymos up then checks that the server admits them and nobody else. Run it again when the domain gains or loses agents, then reload the server. The server thymos up runs itself needs none of this.",
    options: {
      'server-config': {
        type: 'string',
        value: 'FILE',
        required: true,
        help: "your nats-server's configuration (required): the include line is given relative to it, as nats-server reads include paths",
      },
      ...fleet,
    },
    examples: [
      'thymos nats-config --server-config /etc/nats/nats.conf',
      'thymos nats-config --server-config nats.conf --config examples/village/thymos.toml --json',
    ],
  },
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
      config,
      'nats-url': { type: 'string', value: 'URL', help: 'the NATS server to use instead of [nats] url' },
    },
    examples: ['thymos agent --agent-id elder_rowan --port 7401'],
  },
  {
    name: 'supervisor',
    args: '',
    summary: 'Run the supervisor in the foreground (thymos up runs it under pm2)',
    options: { config, 'nats-url': { type: 'string', value: 'URL', help: 'the NATS server to use instead of the fleet one' } },
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
      config,
    },
    examples: ['thymos spare --slot 1 --nats-url nats://127.0.0.1:4222'],
  },
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
