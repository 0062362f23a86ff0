import { type CommandSpec, fleetOptions, jsonOption, strictOption } from './command-spec.js';

/** Making a project and readying the machine for it: init, setup, glossary. */
export const PROJECT_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'init',
    args: '[DIR]',
    summary: 'Start a project in DIR (default: here): thymos.toml, a Pkl domain, a context and a loop script',
    details:
      'Writes thymos.toml, world.pkl (amending the installed schemas/Thymos.pkl by a path that works from DIR), context.json, loop.mjs, README.md and .gitignore. Never overwrites: a folder that has any of them is FILE_EXISTS (exit 3) and nothing is written.',
    options: { json: jsonOption },
    examples: ['thymos init', 'thymos init my-town'],
  },
  {
    name: 'setup',
    args: '',
    summary: 'Check and install what the fleet needs from this machine: nats-server, unless [nats] url is set',
    details:
      'Run as root on Debian or Ubuntu, a missing nats-server is installed from the Debian package (apt-get), said before it is. As a plain user, on macOS or without apt, nothing is installed: NATS_SERVER_MISSING names the command to run (sudo apt-get install nats-server, brew install nats-server) or [nats] url, exit 4. Installs nothing when nats-server is there.',
    options: fleetOptions,
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
      ...fleetOptions,
    },
    examples: ['thymos glossary', 'thymos glossary --from ~/freedict --out glossary --json'],
  },
];

/** Checking the project's config and domain, and applying an edited one to a running fleet: validate, reload, nats-config. */
export const DOMAIN_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'validate',
    args: '',
    summary: 'Check thymos.toml and the Pkl domain schema it names; prints what they define',
    details:
      "Warnings (an api_key_env variable unset in this environment) go to stderr and into the JSON as warnings; with --strict they are errors. With --intents, each tool's examples are resolved against the others as an agent granted every tool resolves plain words offline (resolve_intent, act): how many go to their own tool, which tools are told apart least, and which examples would call another tool. Nothing runs; it reports and does not fail.",
    options: {
      ...fleetOptions,
      strict: strictOption,
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
      "Evaluates and checks the domain first (a bad one changes nothing), stops through the supervisor the agents it no longer names that run (a snapshot; their data stays), then restarts the supervisor on the new domain, which makes the identities of added agents, deletes those of removed ones and has the managed nats-server reload its users: a removed agent's key is refused from then on. Prints what changed. With [nats] url and [nats] identities, the server is yours: it writes data/run/nats-account.conf (the fleet's account) again, and until that server admits every added agent says to reload it (nats-server --signal reload) and exits 1, changing nothing else. thymos up on a running fleet only says it runs.",
    options: fleetOptions,
    examples: ['thymos reload', 'thymos reload --json'],
  },
  {
    name: 'nats-config',
    args: '',
    summary: "Make the fleet's NATS identities and write the users a nats-server you run ([nats] url) includes",
    details:
      "Makes a key (data/secrets/nats/, mode 0600) for the supervisor, the client, the spares and each agent of the domain that has none, deletes those of agents gone from the domain (with a domain schema), and writes the fleet's account — its users and their permissions, public keys only — to data/run/nats-account.conf (mode 0644). Add the include line it prints inside the accounts block of the server's configuration, where each fleet on that server has its own, reload it, and set [nats] identities = true; thymos up then checks that the server admits them and nobody else. Run it again when the domain gains or loses agents, then reload the server. The server thymos up runs itself needs none of this.",
    options: {
      'server-config': {
        type: 'string',
        value: 'FILE',
        required: true,
        help: "your nats-server's configuration (required): the include line is given relative to it, as nats-server reads include paths",
      },
      ...fleetOptions,
    },
    examples: [
      'thymos nats-config --server-config /etc/nats/nats.conf',
      'thymos nats-config --server-config nats.conf --config examples/village/thymos.toml --json',
    ],
  },
];
