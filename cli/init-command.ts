import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve, sep } from 'node:path';

import { thymosRoot } from '../shared/config/index.js';
import { ErrorCode, ExitCode, ThymosError } from '../shared/errors/index.js';
import { commandNamed } from './command-book.js';
import { parseCommandArgs } from './fleet-args.js';

/** The Pkl module an application amends, as a path from `dir` (Pkl resolves `amends` from the file). */
function schemaPathFrom(dir: string): string {
  const path = relative(dir, join(thymosRoot(), 'schemas', 'Thymos.pkl'))
    .split(sep)
    .join('/');
  return path.startsWith('.') ? path : `./${path}`;
}

/** What `thymos init` writes, by file name. */
export function projectFiles(dir: string): Record<string, string> {
  const name = basename(resolve(dir));
  return {
    'thymos.toml': configToml(name),
    'world.pkl': worldPkl(name, schemaPathFrom(dir)),
    'context.json': `${JSON.stringify({ tick: 1, global: { player_location: 'gate' } }, null, 2)}\n`,
    'loop.mjs': LOOP_SCRIPT,
    'README.md': readme(name),
    '.gitignore': 'data/\nnode_modules/\n',
  };
}

const configToml = (name: string) => `# ${name}: a Thymos fleet. Paths are relative to this file; keys: Thymos's docs/configuration.md.
data_dir = "data"

[domain]
schema = "world.pkl"

[lifecycle]
# Let an agent fall asleep as soon as its score drops (the default waits 10 s against flapping).
min_dwell_ms = 0

# JSON lines under data/logs/; thymos logs ID prints them readably.
[log]
level = "info"
`;

const worldPkl = (name: string, schema: string) => `/// The agents of ${name}, where they stand, and what makes each relevant.
amends "${schema}"

agents {
  ["gate_guard"] {
    persona {
      name = "Hild"
      traits { "watchful"; "dry" }
      speechStyle = "short and plain"
      background = "Keeps the town gate and notes who comes and goes."
    }
    tags { "guard" }
    homeLocation = "gate"
    knowledge { "A merchant's cart came through the gate at dawn." }
  }
  ["baker"] {
    persona {
      name = "Odo"
      traits { "cheerful"; "talkative" }
      speechStyle = "warm, full of news"
      background = "Bakes for the whole town and hears every rumour at the counter."
    }
    tags { "merchant" }
    homeLocation = "market"
    knowledge { "Flour is dear this month since the mill flooded." }
  }
}

// An agent hears a world event that happens where it stands, or that names it.
eventFilters {
  new { sameLocation = true }
  new { mentions = true }
}

// An agent's score (0..1) from the context: near the player it is Active, else it sleeps.
relevanceRules {
  new { name = "where the player is"; condition = new SameAs { property = "location"; global = "player_location" }; score = 0.9 }
}

// What agents can do: tools declared as data, granted by an agent's \`capabilities\` (see
// docs/tools-and-intents.md of Thymos). A Script tool calls a function of your own compiled module:
// tools {
//   ["post_notice"] {
//     description = "Pin a notice on the town board"
//     input { ["text"] { max = 200 } }
//     sideEffect = "writes_external"
//     executor = new Script { path = "tools/notice.js"; export = "postNotice" }
//   }
// }
// and in the agent: capabilities { "post_notice" }
// Other executors: new Http { url = … } for a service, new Subprocess { command = …; args { … } }
// for a program, new Mcp { agent = "…"; tool = "…" } for another agent's tool.
`;

const LOOP_SCRIPT = `// A small loop with Thymos as a library: bring the fleet up, tell it where the player is each
// tick, and talk to whoever is Active there. Run: node loop.mjs (after npm install thymos).
import { fileURLToPath } from 'node:url';

import { connect, exitWithError, loadConfig, upFleet } from 'thymos';

async function main() {
  const config = loadConfig(fileURLToPath(new URL('./thymos.toml', import.meta.url)));
  await upFleet(config); // starts nothing when \`thymos up\` already did
  const fleet = await connect(config);
  try {
    const walk = [['gate', 'gate_guard'], ['market', 'baker']];
    for (const [tick, [place, npc]] of walk.entries()) {
      const report = await fleet.reconcile({ tick, global: { player_location: place } });
      console.log(\`tick \${tick}: the player is at the \${place}; started \${report.started.join(', ') || 'nothing'}\`);
      const agent = await fleet.agent(npc);
      const reply = await agent.callTool({ name: \`talk_to_\${npc}\`, arguments: { message: 'What news?', speaker: 'player' } });
      console.log(\`  \${npc}: \${reply.structuredContent?.reply ?? reply.content?.[0]?.text}\`);
    }
  } finally {
    await fleet.close();
  }
  // The fleet keeps running: thymos status, thymos top, and thymos down to stop it.
}

// A Thymos error (nats-server missing, a bad thymos.toml) ends the loop as the thymos command
// does: one line, \`thymos: CODE: message\`, and the exit status of its code.
main().catch(exitWithError);
`;

const readme = (name: string) => `# ${name}

A fleet of [Thymos](https://www.npmjs.com/package/thymos) agents: each agent in \`world.pkl\` runs as
its own process when the context makes it relevant.

\`\`\`sh
npx thymos setup                                 # nats-server: found, or installed (as root, Debian), or the command to run
npx thymos validate                              # check thymos.toml and world.pkl
npx thymos up                                    # nats-server and the supervisor, under pm2 in data/pm2
npx thymos reconcile --context context.json      # wake the agents near the player
npx thymos tools gate_guard                      # what an agent's MCP tools take
npx thymos top                                   # the fleet, live (q quits)
node loop.mjs                                    # the same from code
npx thymos down                                  # snapshot and stop everything
\`\`\`

Logs: \`npx thymos logs gate_guard\`, or \`npx thymos logs --all --follow\` for the whole fleet.
`;

/** `thymos init [DIR]`: a new project in DIR (default: here), ready for `thymos up`; never overwrites a file. */
export function runInitCommand(argv: string[]): number {
  const args = parseCommandArgs(argv, commandNamed('init')!, { min: 0, max: 1 });
  const dir = resolve(args.positionals[0] ?? '.');
  const files = projectFiles(dir);
  const present = Object.keys(files).filter((f) => existsSync(join(dir, f)));
  if (present.length > 0) {
    throw new ThymosError(
      ErrorCode.FILE_EXISTS,
      `${dir} already has ${present.join(', ')}; thymos init writes only into a folder without them (move them away, or name another folder)`,
    );
  }
  const written: string[] = [];
  try {
    mkdirSync(dir, { recursive: true });
    for (const [file, text] of Object.entries(files)) {
      writeFileSync(join(dir, file), text, { flag: 'wx' });
      written.push(file);
    }
  } catch (e) {
    // All or nothing: a half-made project would make the next init refuse.
    for (const file of written) rmSync(join(dir, file), { force: true });
    throw new ThymosError(
      (e as NodeJS.ErrnoException).code === 'EEXIST' ? ErrorCode.FILE_EXISTS : ErrorCode.WRITE_FAILED,
      `cannot write the project into ${dir}: ${(e as Error).message}`,
      { cause: e },
    );
  }
  if (args.values.json) process.stdout.write(`${JSON.stringify({ dir, files: Object.keys(files) })}\n`);
  else {
    const cd = relative(process.cwd(), dir);
    const go = cd === '' ? '' : `cd ${cd.startsWith('..') ? dir : cd} && `;
    process.stdout.write(
      `thymos: a new project in ${dir}: ${Object.keys(files).join(', ')}\nnext: ${go}npx thymos setup && npx thymos validate && npx thymos up && npx thymos reconcile --context context.json\n`,
    );
  }
  return ExitCode.OK;
}
