import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { commandHelp, COMMANDS, usageLine } from '../../cli/command-book.js';
import { runThymos } from '../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../helpers/nats-server.js';
import { createWorkspace, REPO_ROOT, type Workspace } from '../helpers/workspace.js';

/** The compiled `thymos` command, run as a user runs it, in a project folder with no fleet up. */
describe('the thymos command without a running fleet', () => {
  let ws: Workspace;
  let nats: TestNatsServer;

  before(async () => {
    nats = await startNatsServer();
    ws = createWorkspace({ natsUrl: nats.url, extra: '[supervisor]\nrequest_timeout_ms = 3000' });
  });

  after(async () => {
    ws.dispose();
    await nats.stop();
  });

  test('help lists the commands and exits 0; no command prints it and exits 2; an unknown command is named', async () => {
    const help = await runThymos(['--help'], ws.dir);
    assert.equal(help.code, 0);
    for (const command of ['up', 'down', 'status', 'reconcile', 'call', 'logs', 'validate'])
      assert.match(help.stdout, new RegExp(`\\b${command}\\b`));
    assert.equal((await runThymos([], ws.dir)).code, 2);
    const unknown = await runThymos(['reconcle'], ws.dir);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command "reconcle"/);
  });

  test('every command has its own --help and help CMD: usage, each of its options, an example; every option it lists is one it takes', async () => {
    for (const spec of COMMANDS) {
      const [flag, asked] = await Promise.all([runThymos([spec.name, '--help'], ws.dir), runThymos(['help', spec.name], ws.dir)]);
      assert.equal(flag.code, 0, `${spec.name} --help: ${flag.stderr}`);
      assert.equal(asked.stdout, flag.stdout, `help ${spec.name} prints what ${spec.name} --help prints`);
      assert.ok(flag.stdout.startsWith(`usage: ${usageLine(spec)}\n`), `${spec.name} --help starts with its usage line`);
      for (const option of Object.keys(spec.options))
        assert.match(flag.stdout, new RegExp(`\\n  (-\\w, )?--${option}\\b`), `${spec.name} --help names --${option}`);
      assert.match(flag.stdout, new RegExp(`\\nexamples?:\\n  .*\\bthymos ${spec.name}\\b`), `${spec.name} --help has an example`);
      assert.equal(flag.stdout, `${commandHelp(spec)}\n`);
      if (Object.keys(spec.options).length === 0) continue;
      // Every listed option parses: the first option refused is the unknown one put last.
      const given = Object.entries(spec.options).flatMap(([name, o]) => [
        `--${name}`,
        ...(o.type === 'string' ? ['x'] : []),
        ...(o.short ? [`-${o.short}`, ...(o.type === 'string' ? ['3'] : [])] : []),
      ]);
      const probe = await runThymos([spec.name, ...(spec.name === 'world' ? ['query'] : []), ...given, '--zz-unknown'], ws.dir);
      assert.equal(probe.code, 2, `${spec.name}: ${probe.stderr}`);
      assert.match(probe.stderr, /Unknown option '--zz-unknown'/, `${spec.name} takes every option its help lists`);
    }
  });

  test('a mistyped command or option is answered with the nearest one; help of an unknown command says so', async () => {
    const command = await runThymos(['stauts'], ws.dir);
    assert.equal(command.code, 2);
    assert.match(command.stderr, /unknown command "stauts"; did you mean status\?/);
    const option = await runThymos(['reconcile', '--contxt', 'context.json'], ws.dir);
    assert.equal(option.code, 2);
    assert.match(option.stderr, /Unknown option '--contxt' \(did you mean --context\?\)/);
    const agentOption = await runThymos(['agent', '--agent_id', 'x'], ws.dir);
    assert.match(agentOption.stderr, /did you mean --agent-id\?/);
    const nothingNear = await runThymos(['frobnicate'], ws.dir);
    assert.doesNotMatch(nothingNear.stderr, /did you mean/);
    const help = await runThymos(['help', 'reconcle'], ws.dir);
    assert.equal(help.code, 2);
    assert.match(help.stderr, /did you mean reconcile\?/);
  });

  test('completion: bash completes commands, options and files; zsh takes the script and registers it', async () => {
    const bash = await runThymos(['completion', 'bash'], ws.dir);
    assert.equal(bash.code, 0, bash.stderr);
    writeFileSync(join(ws.dir, 'thymos.bash'), bash.stdout);
    const complete = (...words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `source thymos.bash; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _thymos; printf '%s\n' "\${COMPREPLY[@]}"`,
        ],
        { cwd: ws.dir, encoding: 'utf8' },
      )
        .split('\n')
        .filter(Boolean)
        .sort();
    assert.deepEqual(complete('thymos', 'rec'), ['reconcile']);
    assert.deepEqual(complete('thymos', 'reconcile', '--c'), ['--config', '--context']);
    assert.deepEqual(complete('thymos', 'logs', '--f'), ['--follow']);
    assert.deepEqual(complete('thymos', 'help', 'to'), ['tools', 'top']);
    assert.ok(complete('thymos', 'validate', '--config', 'thymos.t').includes('thymos.toml'), 'a file after --config');
    const zsh = await runThymos(['completion', 'zsh'], ws.dir);
    assert.equal(zsh.code, 0, zsh.stderr);
    assert.ok(zsh.stdout.startsWith('#compdef thymos\n'));
    writeFileSync(join(ws.dir, '_thymos'), zsh.stdout);
    execFileSync('zsh', ['-n', '_thymos'], { cwd: ws.dir });
    const registered = execFileSync(
      'zsh',
      ['-f', '-c', 'autoload -U compinit && compinit -u -D && source ./_thymos && print -r -- $_comps[thymos]'],
      { cwd: ws.dir, encoding: 'utf8' },
    );
    assert.equal(registered.trim(), '_thymos');
    const wrong = await runThymos(['completion', 'fish'], ws.dir);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /expected bash or zsh/);
  });

  test('validate passes the village project and names the file, line and key of a bad setting with exit 2', async () => {
    const ok = await runThymos(['validate'], ws.dir);
    assert.equal(ok.code, 0, ok.stderr);
    writeFileSync(join(ws.dir, 'bad.toml'), '[fleet]\nname = "North Fleet"\n');
    const bad = await runThymos(['validate', '--config', 'bad.toml'], ws.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /CONFIG_INVALID: .*bad\.toml:2: fleet\.name: expected a fleet name/);
  });

  test("validate --intents resolves each tool's examples against the others, offline, in text and in the JSON", async () => {
    const village = await runThymos(['validate', '--intents'], ws.dir);
    assert.equal(village.code, 0, village.stderr);
    assert.match(village.stdout, /^intents: 2 examples of 1 tool, each resolved against the others \(2 folds\):$/m);
    // Two tools whose examples share their words: one of the bell's is the gate's call.
    const tool = (name: string, description: string, examples: string[]) =>
      `["${name}"] { description = "${description}"; sideEffect = "writes_local"; executor = new Script { path = "tools.mjs"; export = "act" }; examples { ${examples.map((e) => JSON.stringify(e)).join('; ')} } }`;
    const pkl = [
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}`,
      'tools {',
      tool('ring_alarm_bell', 'Ring the alarm bell so the whole village takes shelter', [
        'ring the alarm bell',
        'sound the alarm, raiders on the road',
        'wolves at the north gate, warn everyone',
      ]),
      tool('close_gate', 'Close and bar one of the village gates', [
        'shut the north gate, the wolves are coming',
        'close the north gate for the night',
        'bar the gate, wolves in the north field',
      ]),
      '}',
    ];
    writeFileSync(join(ws.dir, 'gate.pkl'), pkl.join('\n'));
    writeFileSync(join(ws.dir, 'gate.toml'), 'data_dir = "data"\n[domain]\nschema = "gate.pkl"\n');
    const text = await runThymos(['validate', '--config', 'gate.toml', '--intents'], ws.dir);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^intents: 6 examples of 2 tools, each resolved against the others \(3 folds\):\n {2}own tool first [\d.]+ %; answered with it [\d.]+ % \(called [\d.]+ %\), with another tool [\d.]+ % \(\d+ calls, \d+ of them to tools that write\), with none [\d.]+ %$/m,
    );
    assert.match(text.stdout, /^ {2}told apart least: close_gate \/ ring_alarm_bell \d+$/m);
    assert.match(text.stdout, /^ {4}"wolves at the north gate, warn everyone" \(ring_alarm_bell\) → close_gate, which writes$/m);
    const json = await runThymos(['validate', '--config', 'gate.toml', '--intents', '--json'], ws.dir);
    assert.equal(json.code, 0, json.stderr);
    const intents = (
      JSON.parse(json.stdout) as {
        intents: { examples: number; astray: Array<{ example: string; resolved: string; call: boolean }>; model: string | null };
      }
    ).intents;
    assert.equal(intents.examples, 6);
    assert.ok(intents.astray.some((x) => x.example === 'wolves at the north gate, warn everyone' && x.resolved === 'close_gate' && x.call));
    assert.match(String(intents.model), /glove-100d$/);
    // Without the option, none of it.
    assert.equal((JSON.parse((await runThymos(['validate', '--json'], ws.dir)).stdout) as { intents?: unknown }).intents, undefined);
  });

  test('an api_key_env variable that is not set is a warning that says who reads it and when; --strict makes it CONFIG_INVALID, exit 2', async () => {
    const variable = 'THYMOS_TEST_KEY_NOBODY_SETS';
    const llm = [
      '[llm.dialogue]',
      'provider = "openai-compatible"',
      'base_url = "http://127.0.0.1:9/v1"',
      'model = "m"',
      `api_key_env = "${variable}"`,
    ];
    writeFileSync(join(ws.dir, 'keyed.toml'), `${readFileSync(ws.configPath, 'utf8')}\n${llm.join('\n')}\n`);
    const warned = await runThymos(['validate', '--config', 'keyed.toml', '--json'], ws.dir);
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(
      warned.stderr,
      new RegExp(
        `^thymos: warning: llm\\.dialogue\\.api_key_env: the environment variable ${variable} is not set\\. Each agent reads it when it starts, from the environment the supervisor passes on, which is the one \`thymos up\` ran in`,
      ),
    );
    assert.deepEqual(
      (JSON.parse(warned.stdout) as { warnings: { paths: string[] }[] }).warnings.map((w) => w.paths),
      [['llm.dialogue.api_key_env']],
    );
    const strict = await runThymos(['validate', '--config', 'keyed.toml', '--strict'], ws.dir);
    assert.equal(strict.code, 2);
    assert.match(
      strict.stderr,
      new RegExp(
        `CONFIG_INVALID: llm\\.dialogue\\.api_key_env: the environment variable ${variable} is not set.*--strict makes warnings errors`,
      ),
    );
    process.env[variable] = 'set';
    try {
      const quiet = await runThymos(['validate', '--config', 'keyed.toml', '--strict'], ws.dir);
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.equal(quiet.stderr, '');
    } finally {
      delete process.env[variable];
    }
  });

  test('validate fails a relevance rule that names an agent the schema lacks, and once contextProperties declares any, a rule testing an undeclared property', async () => {
    const base = [`amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}`, 'agents { ["ana"] { persona { name = "Ana" } } }'];
    const check = async (lines: string[]) => {
      writeFileSync(join(ws.dir, 'refs.pkl'), [...base, ...lines].join('\n'));
      writeFileSync(join(ws.dir, 'refs.toml'), 'data_dir = "data"\n[domain]\nschema = "refs.pkl"\n');
      return runThymos(['validate', '--config', 'refs.toml'], ws.dir);
    };
    const stranger = await check([
      'relevanceRules { new { name = "boss"; condition = new PropertyTrue { property = "in_party" }; score = 1.0; agents { "anna" } } }',
    ]);
    assert.equal(stranger.code, 2);
    assert.match(
      stranger.stderr,
      /SCHEMA_INVALID: domain schema .*refs\.pkl:3: relevanceRules\[0\] \(boss\)\.agents: no agent "anna"; expected one of ana/,
    );
    const rule =
      'relevanceRules { new { name = "near"; condition = new SameAs { property = "location"; global = "player_location" }; score = 0.9 } }';
    const undeclared = await check([rule, 'contextProperties { global { "weather" } }']);
    assert.equal(undeclared.code, 2);
    assert.match(
      undeclared.stderr,
      /relevanceRules\[0\] \(near\)\.condition\.global: "player_location" is not in contextProperties\.global \(weather\)/,
    );
    const declared = await check([rule, 'contextProperties { global { "weather"; "player_location" } }']);
    assert.equal(declared.code, 0, declared.stderr);
  });

  test('status with no supervisor on the configured NATS says the fleet is not running, and how to start it', async () => {
    const status = await runThymos(['status', '--json'], ws.dir);
    assert.equal(status.code, 1);
    assert.match(status.stderr, /FLEET_NOT_RUNNING: .*thymos\.supervisor\.status.*thymos up/);
  });
});
