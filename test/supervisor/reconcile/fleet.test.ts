import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect } from '@nats-io/transport-node';

import { connect, type Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import type { FleetStatus, ReconcileReport } from '../../../shared/protocol/supervisor-protocol.js';
import { findNatsServer, type HostFacts } from '../../../supervisor/nats-server/server-binary.js';
import { alive, asFleetSupervisor, eventually, fleetPids, killFleet, runThymos } from '../../helpers/fleet.js';
import { terminal } from '../../helpers/terminal.js';
import { createWorkspace, THYMOS_BIN, type Workspace } from '../../helpers/workspace.js';

const BEHAVIOR = `
import { existsSync } from 'node:fs';
export function createBehavior({ id }) {
  if (existsSync(new URL('broken-' + id, import.meta.url))) throw new Error('behaviour of ' + id + ' is broken on purpose');
  return {
    async talk(ctx, req) { return { reply: id + ' hears: ' + req.message, grounding: [] }; },
    evaluateRelevance(ctx, input) { return typeof input.properties.self_score === 'number' ? input.properties.self_score : undefined; },
  };
}
`;
const RELEVANCE = `export const contextProperties = { global: ['alarm'] };\nexport function evaluate({ id, global }) { return global.alarm && id === 'captain_lysa' ? 0.95 : undefined; }\n`;

let ws: Workspace;
let data: string;
let fleet: Fleet;

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;
const row = (s: FleetStatus, id: string) => s.agents.find((a) => a.id === id)!;
const strip = (r: ReconcileReport) => ({ ...r, duration_ms: 0 });

describe('a fleet under pm2 with a real nats-server and SurrealDB', () => {
  before(async () => {
    ws = createWorkspace({
      agent: ['behavior = "behavior.mjs"'],
      extra: [
        '[lifecycle]',
        'min_dwell_ms = 0',
        'max_active = 4',
        '[supervisor]',
        'relevance = "relevance.mjs"',
        'start_timeout_ms = 30000',
        '[host]',
        'name = "mill_2"',
      ].join('\n'),
    });
    writeFileSync(join(ws.dir, 'behavior.mjs'), BEHAVIOR);
    writeFileSync(join(ws.dir, 'relevance.mjs'), RELEVANCE);
    data = join(ws.dir, 'data');
  });

  after(async () => {
    await fleet?.close().catch(() => undefined);
    await killFleet(data);
    ws.dispose();
  });

  test('thymos up starts nats-server and the supervisor under the fleet PM2_HOME; a second up says it is running, on one line of stderr, and exits 3', async () => {
    const first = await runThymos(['up'], ws.dir);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /fleet up \(supervisor pid \d+, NATS nats:\/\/127\.0\.0\.1:\d+\)/);
    const { daemon, apps } = fleetPids(data);
    assert.ok(daemon && alive(daemon), 'pm2 daemon runs under <data>/pm2');
    assert.deepEqual([...apps.keys()].sort(), ['thymos-nats', 'thymos-supervisor']);
    const second = await runThymos(['up'], ws.dir);
    assert.equal(second.code, 3, second.stderr);
    assert.equal(second.stdout, '');
    assert.match(
      second.stderr,
      /^thymos: the fleet is already running \(supervisor pid (\d+), NATS nats:\/\/127\.0\.0\.1:\d+\)\n$/,
      'one line on stderr',
    );
    assert.equal(Number(/pid (\d+)/.exec(second.stderr)![1]), apps.get('thymos-supervisor'));
    fleet = await connect(loadConfig(ws.configPath));
  });

  test('status --json lists every agent of the schema, Dormant, with id, state, mode, pid, port and score', async () => {
    const r = await runThymos(['status', '--json'], ws.dir);
    assert.equal(r.code, 0, r.stderr);
    const status = JSON.parse(r.stdout) as FleetStatus;
    assert.deepEqual(
      status.agents.map((a) => a.id),
      ['bram_smith', 'captain_lysa', 'elder_rowan', 'mira_herbalist', 'old_fenn', 'tomas_innkeeper'],
    );
    for (const a of status.agents) {
      assert.deepEqual([a.host, a.state, a.mode, a.pid, a.port, a.score], ['mill_2', 'dormant', null, null, null, null]);
    }
    assert.deepEqual(status.counts, { active: 0, listening: 0, dormant: 6, archived: 0 });
  });

  test('reconcile warns on stderr about context properties nothing reads, naming the likely meant one; --strict refuses them with exit 2', async () => {
    writeFileSync(
      join(ws.dir, 'typo.json'),
      JSON.stringify({ global: { player_loction: 'forge', alarm: false }, agents: { bram_smith: { in_pary: true } } }),
    );
    const warned = await runThymos(['reconcile', '--context', 'typo.json', '--dry-run', '--json'], ws.dir);
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(
      warned.stderr,
      /^thymos: warning: context: global\.player_loction: no relevance rule uses "player_loction" .* \(did you mean player_location\?\)$/m,
    );
    assert.match(warned.stderr, /^thymos: warning: context: agents\.bram_smith\.in_pary: .*\(did you mean in_party\?\)$/m);
    assert.doesNotMatch(warned.stderr, /alarm/, 'what the relevance module says it reads is known');
    assert.equal((JSON.parse(warned.stdout) as ReconcileReport).warnings?.length, 2);
    const strict = await runThymos(['reconcile', '--context', 'typo.json', '--strict'], ws.dir);
    assert.equal(strict.code, 2);
    assert.match(strict.stderr, /INVALID_CONTEXT: context: global\.player_loction: .*--strict makes these errors/);
  });

  test('a second supervisor on the same fleet refuses with SUPERVISOR_ALREADY_RUNNING', async () => {
    const info = JSON.parse(readFileSync(join(data, 'run', 'fleet.json'), 'utf8')) as { nats_url: string };
    const second = await runThymos(['supervisor', '--nats-url', info.nats_url], ws.dir);
    assert.equal(second.code, 3);
    assert.match(second.stderr, /SUPERVISOR_ALREADY_RUNNING: the supervisor of .* is already running \(pid \d+/);
  });

  const village = {
    tick: 1,
    global: { player_location: 'village_square' },
    agents: { bram_smith: { in_party: true }, mira_herbalist: { active_quest: true }, old_fenn: { relevance: 0.05 } },
  };

  test('reconcile starts, archives and leaves agents by their scores; the same context again changes nothing', async () => {
    writeFileSync(join(ws.dir, 'ctx.json'), JSON.stringify(village));
    const r = await runThymos(['reconcile', '--context', 'ctx.json', '--json'], ws.dir);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as ReconcileReport;
    assert.deepEqual(strip(report), {
      started: ['bram_smith', 'elder_rowan', 'mira_herbalist'],
      stopped: [],
      upgraded: [],
      downgraded: [],
      archived: ['old_fenn'],
      restored: [],
      unchanged: ['captain_lysa', 'tomas_innkeeper'],
      failed: [],
      warnings: [],
      dry_run: false,
      duration_ms: 0,
    });
    assert.match(r.stderr, /\[4\/4\]/, 'progress is shown on stderr');
    const status = await fleet.status();
    assert.deepEqual(
      status.agents.map((a) => [a.id, a.state, a.mode, a.source]),
      [
        ['bram_smith', 'active', 'active', 'rules'],
        ['captain_lysa', 'dormant', null, 'default'],
        ['elder_rowan', 'active', 'active', 'rules'],
        ['mira_herbalist', 'listening', 'passive', 'rules'],
        ['old_fenn', 'archived', null, 'forced'],
        ['tomas_innkeeper', 'dormant', null, 'default'],
      ],
    );
    for (const id of ['bram_smith', 'elder_rowan', 'mira_herbalist']) {
      const a = row(status, id);
      assert.ok(a.pid && alive(a.pid) && a.port, `${id} runs`);
      const state = JSON.parse(text(await (await fleet.agent(id)).callTool({ name: `get_${id}_state`, arguments: {} }))) as {
        pid: number;
        port: number;
      };
      assert.deepEqual([state.pid, state.port], [a.pid, a.port], `${id} answers MCP on its registered port`);
    }
    const again = await fleet.reconcile(village);
    assert.deepEqual(again.unchanged.length, 6);
    assert.deepEqual(
      [...again.started, ...again.stopped, ...again.upgraded, ...again.downgraded, ...again.archived, ...again.restored, ...again.failed],
      [],
    );
  });

  test('a dry run reports the plan and changes nothing', async () => {
    const before = await fleet.status();
    const plan = await fleet.reconcile(
      { ...village, agents: { ...village.agents, elder_rowan: { relevance: 0.2 }, tomas_innkeeper: { relevance: 0.8 } } },
      { dryRun: true },
    );
    assert.equal(plan.dry_run, true);
    assert.deepEqual([plan.stopped, plan.started], [['elder_rowan'], ['tomas_innkeeper']]);
    const after = await fleet.status();
    assert.deepEqual(
      after.agents.map((a) => [a.id, a.state, a.pid]),
      before.agents.map((a) => [a.id, a.state, a.pid]),
    );
  });

  test('Active ↔ Listening switches the mode over NATS without restarting the process', async () => {
    const pid = row(await fleet.status(), 'elder_rowan').pid;
    const down = await fleet.reconcile({ ...village, agents: { ...village.agents, elder_rowan: { relevance: 0.5 } } });
    assert.deepEqual(down.downgraded, ['elder_rowan']);
    const elder = await fleet.agent('elder_rowan');
    const refused = await elder.callTool({ name: 'talk_to_elder_rowan', arguments: { message: 'Hello?', speaker: 'player' } });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /AGENT_NOT_ACTIVE/);
    const up = await fleet.reconcile(village);
    assert.deepEqual(up.upgraded, ['elder_rowan']);
    assert.equal(row(await fleet.status(), 'elder_rowan').pid, pid, 'same process throughout');
    const answer = await (
      await fleet.agent('elder_rowan')
    ).callTool({ name: 'talk_to_elder_rowan', arguments: { message: 'Hello?', speaker: 'player' } });
    assert.equal(answer.isError, undefined);
  });

  test("an agent starts under its supervisor's claim: its start context carries the claim's token, and its status notices name it", async () => {
    const context = JSON.parse(readFileSync(join(data, 'run', 'elder_rowan.context.json'), 'utf8')) as { ownershipToken?: number };
    assert.ok(
      Number.isInteger(context.ownershipToken) && context.ownershipToken! > 0,
      `a token in the start context: ${context.ownershipToken}`,
    );
    const info = JSON.parse(readFileSync(join(data, 'run', 'fleet.json'), 'utf8')) as { nats_url: string };
    const nc = await natsConnect({ servers: info.nats_url, ...asFleetSupervisor(data) });
    try {
      const sub = nc.subscribe('thymos.agent.elder_rowan.status');
      const tokens = (async () => {
        for await (const m of sub) return (JSON.parse(m.string()) as { kind: string; token?: number }).token;
        return undefined;
      })();
      await nc.flush();
      // A switch of mode makes the agent publish a notice at once.
      await fleet.reconcile({ ...village, agents: { ...village.agents, elder_rowan: { relevance: 0.5 } } });
      assert.equal(await tokens, context.ownershipToken);
      await fleet.reconcile(village);
    } finally {
      await nc.close();
    }
  });

  test('memories are intact after Dormant → Active and after Archived → Active', async () => {
    const fact = 'The smith hid a silver key under the third anvil';
    const bram = await fleet.agent('bram_smith');
    const saved = await bram.callTool({ name: 'remember', arguments: { content: fact, importance: 0.9 } });
    assert.equal(saved.isError, undefined, text(saved));
    const recallFact = async () =>
      text(await (await fleet.agent('bram_smith')).callTool({ name: 'recall', arguments: { query: 'silver key anvil' } }));

    const oldPid = row(await fleet.status(), 'bram_smith').pid!;
    const slept = await fleet.reconcile({ ...village, agents: { ...village.agents, bram_smith: { relevance: 0.2 } } });
    assert.deepEqual(slept.stopped, ['bram_smith']);
    assert.equal(alive(oldPid), false, 'the process is gone');
    assert.ok(existsSync(join(data, 'agents', 'bram_smith', 'db')), 'its database stays on disk');
    const woke = await fleet.reconcile(village);
    assert.deepEqual(woke.started, ['bram_smith']);
    assert.match(await recallFact(), /silver key/);

    const archived = await fleet.reconcile({ ...village, agents: { ...village.agents, bram_smith: { relevance: 0.01 } } });
    assert.deepEqual([archived.stopped, archived.archived], [['bram_smith'], ['bram_smith']]);
    assert.ok(existsSync(join(data, 'archive', 'bram_smith.tar.gz')));
    assert.equal(existsSync(join(data, 'agents', 'bram_smith')), false, 'packed into one archive file');
    const back = await fleet.reconcile(village);
    assert.deepEqual([back.restored, back.started], [['bram_smith'], ['bram_smith']]);
    assert.equal(existsSync(join(data, 'archive', 'bram_smith.tar.gz')), false);
    assert.match(await recallFact(), /silver key/);
  });

  test("the application's module scores first; a running agent's own answer counts when module and rules give nothing", async () => {
    const alarm = await fleet.reconcile({ ...village, global: { ...village.global, alarm: true } });
    assert.deepEqual(alarm.started, ['captain_lysa']);
    assert.equal(row(await fleet.status(), 'captain_lysa').source, 'module');
    const own = await fleet.reconcile({ ...village, agents: { ...village.agents, captain_lysa: { self_score: 0.5 } } });
    assert.deepEqual(own.downgraded, ['captain_lysa']);
    const lysa = row(await fleet.status(), 'captain_lysa');
    assert.deepEqual([lysa.state, lysa.score, lysa.source], ['listening', 0.5, 'agent']);
  });

  test('an invalid context is INVALID_CONTEXT naming the bad path, from the CLI (exit 2) and from the library', async () => {
    writeFileSync(join(ws.dir, 'bad.json'), JSON.stringify({ agents: { elder_rowan: { relevance: 2 } } }));
    const cli = await runThymos(['reconcile', '--context', 'bad.json'], ws.dir);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /INVALID_CONTEXT: bad\.json: agents\.elder_rowan\.relevance: .*got 2/);
    const piped = await runThymos(['reconcile', '--context', '-'], ws.dir, '{"agents":{"nobody":{}}}');
    assert.equal(piped.code, 2);
    assert.match(piped.stderr, /INVALID_CONTEXT: context: agents\.nobody: no agent "nobody"/);
    await assert.rejects(
      fleet.reconcile({ tick: -3 }),
      (err: unknown) => isThymosError(err, 'INVALID_CONTEXT') && err.location?.path === 'tick',
    );
    const status = await fleet.status();
    assert.equal(row(status, 'elder_rowan').state, 'active', 'nothing changed');
  });

  test('single-agent commands: start, stop, archive, restore; unknown ids and bad arguments are refused', async () => {
    assert.equal((await runThymos(['start', 'tomas_innkeeper', '--mode', 'passive'], ws.dir)).code, 0);
    assert.equal(row(await fleet.status(), 'tomas_innkeeper').state, 'listening');
    assert.equal((await runThymos(['stop', 'tomas_innkeeper'], ws.dir)).code, 0);
    assert.equal((await runThymos(['archive', 'tomas_innkeeper'], ws.dir)).code, 0);
    assert.equal(row(await fleet.status(), 'tomas_innkeeper').state, 'archived');
    assert.equal((await runThymos(['restore', 'tomas_innkeeper'], ws.dir)).code, 0);
    assert.equal(row(await fleet.status(), 'tomas_innkeeper').state, 'dormant');
    const unknown = await runThymos(['start', 'nobody'], ws.dir);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /AGENT_NOT_FOUND: no agent "nobody"/);
    const bad = await runThymos(['start', 'Not An Id'], ws.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /USAGE: ID: expected an agent id/);
    const history = await fleet.history('tomas_innkeeper');
    assert.deepEqual(
      history.slice(0, 4).map((t) => `${t.from}>${t.to}`),
      ['archived>dormant', 'dormant>archived', 'listening>dormant', 'dormant>listening'],
    );
  });

  test('an agent that cannot start fails alone, fast, with the end of its log; the others still move', async () => {
    writeFileSync(join(ws.dir, 'broken-tomas_innkeeper'), '');
    try {
      const t = Date.now();
      const report = await fleet.reconcile({
        ...village,
        agents: { ...village.agents, tomas_innkeeper: { relevance: 1 }, old_fenn: { relevance: 0.5 } },
      });
      assert.ok(Date.now() - t < 20_000, 'not the whole 30 s start budget');
      assert.deepEqual(
        report.failed.map((f) => [f.id, f.code]),
        [['tomas_innkeeper', 'AGENT_START_FAILED']],
      );
      assert.match(report.failed[0]!.message, /broken on purpose/);
      assert.deepEqual([report.restored, report.started], [['old_fenn'], ['old_fenn']]);
      const status = await fleet.status();
      const tomas = row(status, 'tomas_innkeeper');
      assert.deepEqual([tomas.state, tomas.pid, tomas.last_error?.code], ['dormant', null, 'AGENT_START_FAILED']);
      assert.equal([...fleetPids(data).apps.keys()].includes('agent-tomas-innkeeper'), false, 'no crash-looping process left behind');
    } finally {
      rmSync(join(ws.dir, 'broken-tomas_innkeeper'));
    }
    const back = await fleet.reconcile({ ...village, agents: { ...village.agents, old_fenn: { relevance: 0.05 } } });
    assert.deepEqual([back.stopped, back.archived, back.failed], [['old_fenn'], ['old_fenn'], []]);
  });

  test('thymos tools lists what an agent takes; call names the right tool for a wrong one and refuses bad arguments with exit 2', async () => {
    const tools = await runThymos(['tools', 'elder_rowan'], ws.dir);
    assert.equal(tools.code, 0, tools.stderr);
    assert.match(tools.stdout, /^talk_to_elder_rowan +message\*.*speaker/m);
    assert.match(tools.stdout, /^recall +query\*/m);
    const wrong = await runThymos(['call', 'elder_rowan', 'talk_to_elder', '{"message":"hi"}'], ws.dir);
    assert.equal(wrong.code, 2);
    assert.match(
      wrong.stderr,
      /NOT_FOUND: elder_rowan has no tool "talk_to_elder"; did you mean talk_to_elder_rowan\?\nits tools: .*get_elder_rowan_state/,
    );
    const bad = await runThymos(['call', 'elder_rowan', 'talk_to_elder_rowan', '{"message":5}'], ws.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^thymos: INVALID_INPUT: arguments of talk_to_elder_rowan: .*message/s);
  });

  test('thymos call and thymos logs reach one agent', async () => {
    const call = await runThymos(['call', 'elder_rowan', 'talk_to_elder_rowan', '{"message":"Good day","speaker":"player"}'], ws.dir);
    assert.equal(call.code, 0, call.stderr);
    assert.match(call.stdout, /elder_rowan hears: Good day/);
    assert.equal(call.stdout.match(/hears: Good day/g)?.length, 1, 'the reply, printed as it streams, is not printed again');
    const off = await runThymos(['call', 'old_fenn', 'get_old_fenn_state'], ws.dir);
    assert.equal(off.code, 1);
    assert.match(off.stderr, /AGENT_NOT_ACTIVE: old_fenn is archived/);
    const logs = await runThymos(['logs', 'elder_rowan', '--lines', '200'], ws.dir);
    assert.equal(logs.code, 0);
    // Readable by default (pino-pretty, one line each), as written with --json.
    assert.match(logs.stdout, /^\[\d{4}-\d\d-\d\d [\d:.]+\] INFO: agent ready on http:\/\/127\.0\.0\.1:\d+\/mcp \{/m);
    const raw = await runThymos(['logs', 'elder_rowan', '--lines', '200', '--json'], ws.dir);
    assert.match(raw.stdout, /^\{"level":30,.*"msg":"agent ready on http:\/\/127\.0\.0\.1:\d+\/mcp"/m);
    const neither = await runThymos(['logs'], ws.dir);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /expected one process \(an agent id, supervisor or nats-server\) or --all, not neither/);
  });

  test('thymos top redraws on a terminal, re-sorts on a key and quits on q; logs --all -f follows every process, labelled', async () => {
    const top = terminal('top', `${process.execPath} ${THYMOS_BIN} top --interval 250 --sort state`, { cwd: ws.dir });
    try {
      const first = await top.until(/thymos top — (\d\d:\d\d:\d\d)/, 30_000, 'a first frame');
      await eventually(
        () => {
          const now = /thymos top — (\d\d:\d\d:\d\d)/.exec(top.screen())?.[1];
          return now && now !== first ? now : undefined;
        },
        30_000,
        'a later frame drawn in its place',
      );
      assert.match(top.screen(), /sorted by state/);
      assert.match(top.screen(), /elder_rowan\s+active/);
      top.keys('i');
      await top.until(/sorted by id/, 10_000, 'sorted by id after i');
      top.keys('q');
      await top.until(/exited 0/, 10_000, 'top quitting on q with 0');
    } finally {
      top.close();
    }

    const follow = spawn(process.execPath, [THYMOS_BIN, 'logs', '--all', '-f', '-n', '1'], { cwd: ws.dir });
    let text = '';
    follow.stdout.on('data', (c: Buffer) => (text += c.toString('utf8')));
    try {
      await eventually(() => (/^supervisor +\| /m.test(text) ? true : undefined), 20_000, 'the last line of each log');
      const before = text.length;
      // A dry run that would move an agent writes its line and moves nothing.
      const planned = await fleet.reconcile({ agents: { elder_rowan: { relevance: 0 } } }, { dryRun: true });
      assert.ok(planned.stopped.length + planned.archived.length > 0, JSON.stringify(planned));
      await eventually(
        () => (text.length > before && /^supervisor +\| .*reconcile done/m.test(text.slice(before)) ? true : undefined),
        20_000,
        'a new supervisor line followed',
      );
    } finally {
      follow.kill('SIGKILL');
    }
  });

  test('an agent killed with -9 is restarted by pm2 and answers again on the same port', async () => {
    const before = row(await fleet.status(), 'elder_rowan');
    process.kill(before.pid!, 'SIGKILL');
    const after = await eventually(
      async () => {
        const a = row(await fleet.status(), 'elder_rowan');
        return a.pid !== before.pid && a.restarts >= 1 && a.pid && alive(a.pid) ? a : undefined;
      },
      30_000,
      'elder_rowan restarted',
    );
    assert.equal(after.port, before.port);
    const state = await eventually(
      async () =>
        JSON.parse(text(await (await fleet.agent('elder_rowan')).callTool({ name: 'get_elder_rowan_state', arguments: {} }))) as {
          pid: number;
        },
      20_000,
      'MCP answers',
    );
    assert.equal(state.pid, after.pid);
  });

  test('/metrics exposes agent counts, reconcile and start-up durations and transitions, each series labelled with its host', async () => {
    const { supervisor } = await fleet.status();
    assert.match(supervisor.metrics_url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const body = await (await fetch(supervisor.metrics_url)).text();
    assert.match(body, /thymos_agents\{state="active",host="mill_2"\} 2/);
    assert.match(body, /thymos_reconcile_duration_seconds_count\{host="mill_2"\} \d+/);
    assert.match(body, /thymos_agent_startup_duration_seconds_count\{host="mill_2"\} \d+/);
    assert.match(body, /thymos_transitions_total\{kind="start",host="mill_2"\} \d+/);
    const series = body.split('\n').filter((l) => l.startsWith('thymos_'));
    assert.deepEqual(
      series.filter((l) => !l.includes('host="mill_2"')),
      [],
      'every series names its host',
    );
    // The supervisor's log lines and audit entries name it too.
    const jsonLines = (file: string) =>
      readFileSync(join(data, 'logs', file), 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'));
    const elsewhere = (file: string) => jsonLines(file).filter((l) => (JSON.parse(l) as { host?: string }).host !== 'mill_2');
    for (const file of ['supervisor.log', 'audit.jsonl', 'elder_rowan.log']) {
      assert.ok(jsonLines(file).length > 0, file);
      assert.deepEqual(elsewhere(file), [], `every line of ${file} names its host`);
    }
  });

  test('a supervisor killed with -9 is restarted by pm2 and adopts the running agents without duplicates', async () => {
    const before = await fleet.status();
    const running = before.agents.filter((a) => a.pid !== null);
    process.kill(before.supervisor.pid, 'SIGKILL');
    const after = await eventually(
      async () => {
        const s = await fleet.status();
        return s.supervisor.pid !== before.supervisor.pid ? s : undefined;
      },
      30_000,
      'a new supervisor answering',
    );
    assert.deepEqual(
      after.agents.map((a) => [a.id, a.state, a.pid, a.port]),
      before.agents.map((a) => [a.id, a.state, a.pid, a.port]),
      'same agents, same processes',
    );
    const apps = [...fleetPids(data).apps.keys()].filter((n) => n.startsWith('agent-')).sort();
    assert.deepEqual(apps, running.map((a) => `agent-${a.id.replace(/_/g, '-')}`).sort(), 'one pm2 app per running agent');
    const again = await fleet.reconcile({ ...village, agents: { ...village.agents, captain_lysa: { self_score: 0.5 } } });
    assert.equal(again.unchanged.length, 6, JSON.stringify(again));
  });

  test('malformed requests to thymos.supervisor.* get coded errors, and the supervisor keeps answering', async () => {
    const info = JSON.parse(readFileSync(join(data, 'run', 'fleet.json'), 'utf8')) as { nats_url: string };
    const nc = await natsConnect({ servers: info.nats_url, ...asFleetSupervisor(data) });
    try {
      const ask = async (op: string, body: string) =>
        JSON.parse((await nc.request(`thymos.supervisor.${op}`, body, { timeout: 10_000 })).string()) as {
          ok: boolean;
          error?: { code: string; message: string };
        };
      const cases: Array<[string, string, string, RegExp]> = [
        ['reconcile', 'not json', 'INVALID_INPUT', /request: expected JSON/],
        ['reconcile', '{"context":{"agents":{"elder_rowan":{"relevance":-1}}}}', 'INVALID_CONTEXT', /agents\.elder_rowan\.relevance/],
        ['reconcile', '{"context":{},"surprise":1}', 'INVALID_CONTEXT', /surprise/],
        ['start', '{"id":"../../etc"}', 'INVALID_INPUT', /id/],
        ['start', '{"id":"nobody"}', 'AGENT_NOT_FOUND', /nobody/],
        ['stop', '[]', 'INVALID_INPUT', /expected object/],
        ['history', '{"id":"elder_rowan","limit":100000}', 'INVALID_INPUT', /limit/],
      ];
      for (const [op, body, code, message] of cases) {
        const reply = await ask(op, body);
        assert.equal(reply.ok, false, `${op} ${body}`);
        assert.equal(reply.error!.code, code, `${op} ${body}: ${reply.error!.message}`);
        assert.match(reply.error!.message, message);
      }
      let seed = 11;
      const rnd = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
      const pieces = ['{', '}', '"id"', ':', '"elder_rowan"', ',', '"context"', '[', ']', '1e999', 'null', '"mode"', '"passive"', '"x"'];
      for (let i = 0; i < 150; i++) {
        const body = Array.from({ length: Math.floor(rnd() * 8) }, () => pieces[Math.floor(rnd() * pieces.length)]).join('');
        const op = ['reconcile', 'status', 'history', 'restore'][i % 4]!;
        const reply = await ask(op, body);
        assert.ok(reply.ok === true || typeof reply.error?.code === 'string', `${op} ${body}`);
      }
      const status = await fleet.status();
      assert.equal(status.agents.length, 6, 'still answering, nothing lost');
    } finally {
      await nc.close();
    }
  });

  test('thymos down snapshots and stops every agent, then the supervisor, nats-server and the pm2 daemon', async () => {
    const running = (await fleet.status()).agents.filter((a) => a.pid !== null).length;
    assert.ok(running >= 3);
    await fleet.close();
    const { daemon, apps } = fleetPids(data);
    const pids = [daemon!, ...apps.values()];
    assert.ok(pids.length >= 5);
    const down = await runThymos(['down'], ws.dir);
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, new RegExp(`fleet down \\(${running} agent\\(s\\) stopped with a snapshot\\)`));
    assert.deepEqual(pids.filter(alive), [], 'every process is gone');
    const snapshots = readFileSync(join(data, 'logs', 'elder_rowan.log'), 'utf8');
    assert.match(snapshots, /"msg":"stopped"/);
    const status = await runThymos(['status'], ws.dir);
    assert.equal(status.code, 1);
    assert.match(
      status.stderr,
      /FLEET_NOT_RUNNING: the fleet is not running: nothing listens on 127\.0\.0\.1:\d+, its NATS port \(data\/run\/fleet\.json\); start it with thymos up/,
    );
    const again = await runThymos(['down'], ws.dir);
    assert.match(again.stdout, /not running/);
  });
});

test('a missing nats-server binary is one line naming the command to run on that host, and [nats] url', () => {
  const missing = (host: Partial<HostFacts>) => {
    try {
      findNatsServer({ platform: 'linux', root: false, apt: true, dirs: ['/nonexistent'], ...host });
    } catch (err) {
      assert.ok(isThymosError(err, 'NATS_SERVER_MISSING'), String(err));
      assert.doesNotMatch(err.message, /\n/);
      assert.match(err.message, /\[nats\] url/);
      return err.message;
    }
    assert.fail('nats-server was found in /nonexistent');
  };
  assert.match(missing({}), /run `sudo apt-get install nats-server`/);
  assert.match(missing({ root: true }), /run `apt-get install nats-server`/);
  assert.match(missing({ platform: 'darwin', apt: false }), /run `brew install nats-server`/);
  assert.match(missing({ apt: false }), /install nats-server \(https:\/\/github\.com\/nats-io\/nats-server\/releases\) on your PATH/);
});
