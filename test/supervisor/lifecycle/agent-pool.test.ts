import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { compileCacheAvailable } from '../../../shared/platform/compile-cache.js';
import { ProcessManager } from '../../../supervisor/pm2/process-manager.js';
import { alive, eventually, fleetPids, runThymos, startTestFleet, suiteFleet, type TestFleet } from '../../helpers/fleet.js';

const wake = (id: string) => ({ agents: { [id]: { relevance: 1 } } });
const sleepAgent = (id: string) => ({ agents: { [id]: { relevance: 0.2 } } });

/** Spares whose log says they are ready for a claim, by app name, with their pids (from pm2). */
async function readySpares(pm: ProcessManager, data: string): Promise<Map<string, number>> {
  const ready = new Map<string, number>();
  for (const app of await pm.list()) {
    if (!/^thymos-spare-\d+$/.test(app.name) || app.status !== 'online' || !app.pid) continue;
    const log = join(data, 'logs', 'pool', `${app.name}.log`);
    if (existsSync(log) && readFileSync(log, 'utf8').includes('spare ready')) ready.set(app.name, app.pid);
  }
  return ready;
}

/** Waits until the supervisor itself counts `n` spares ready (pm2 may show a spare a moment before the pool takes it in). */
async function poolReady(fleet: TestFleet['fleet'], n: number): Promise<void> {
  await eventually(
    async () => ((await fleet.status()).supervisor.pool?.ready ?? 0) >= n || undefined,
    60_000,
    `${n} spare(s) ready in the pool`,
  );
}

/** The `agent started` lines of the supervisor's log for `id`, oldest first. */
function startLines(data: string, id: string): Array<{ spare: string | null; pid: number; port: number }> {
  return readFileSync(join(data, 'logs', 'supervisor.log'), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"agent started"'))
    .map((l) => JSON.parse(l) as { agent: string; spare: string | null; pid: number; port: number })
    .filter((e) => e.agent === id);
}

/** Files a process has open, as paths. */
function openFiles(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/${pid}/fd/${fd}`)];
    } catch {
      return [];
    }
  });
}

describe('the warm pool', () => {
  let tf: TestFleet;
  let pm: ProcessManager;
  let data: string;
  before(async () => {
    tf = await startTestFleet(['[supervisor]', 'pool_size = 2', '[lifecycle]', 'min_dwell_ms = 0']);
    data = join(tf.ws.dir, 'data');
    pm = await ProcessManager.connect(join(data, 'pm2'));
    await eventually(async () => ((await readySpares(pm, data)).size === 2 ? true : undefined), 60_000, 'two ready spares');
    await poolReady(tf.fleet, 2);
  });
  after(async () => {
    pm?.disconnect();
    await tf?.dispose();
  });

  test('spares keep compiled code in one cache under the data directory where Node has one (22.10 and later), and none where it has not', async () => {
    const cache = join(data, 'cache', 'compile');
    const [pid] = (await readySpares(pm, data)).values();
    assert.ok(pid, 'a ready spare');
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    if (compileCacheAvailable()) {
      assert.ok(
        env.includes(`NODE_COMPILE_CACHE=${cache}`),
        `the spare's environment names the cache: ${env.filter((e) => e.startsWith('NODE_')).join(' ')}`,
      );
      // A spare writes the cache once it is ready, not only at exit.
      await eventually(
        () => (existsSync(cache) && readdirSync(cache, { recursive: true }).length > 1 ? true : undefined),
        30_000,
        'compiled code in the cache',
      );
    } else {
      assert.deepEqual(
        env.filter((e) => e.startsWith('NODE_COMPILE_CACHE=')),
        [],
        `Node ${process.version} has no compile cache to name`,
      );
      assert.equal(existsSync(cache), false);
    }
  });

  test('a wake takes a spare: pm2, status, url and logs name the agent, it holds only its own files, and it keeps its port', async () => {
    const { fleet, ws } = tf;
    const spares = await readySpares(pm, data);
    const report = await fleet.reconcile(wake('elder_rowan'));
    assert.deepEqual(report.failed, []);
    const row = (await fleet.status()).agents.find((a) => a.id === 'elder_rowan')!;
    const first = startLines(data, 'elder_rowan').at(-1)!;
    assert.ok(first.spare && spares.has(first.spare), `started from a spare: ${JSON.stringify(first)}`);
    assert.equal(row.pid, spares.get(first.spare), 'the agent runs in the spare that was claimed');
    const apps = await pm.list();
    assert.equal(apps.find((a) => a.name === 'agent-elder_rowan')?.pid, row.pid, 'pm2 names the claimed spare after the agent');
    assert.ok(!apps.some((a) => a.name === first.spare), 'the spare name is gone from pm2');

    const url = await runThymos(['url', 'elder_rowan'], ws.dir);
    assert.equal(url.code, 0, url.stderr);
    assert.equal(url.stdout.trim(), `http://127.0.0.1:${row.port}/mcp`);
    // The header it asks for by default, alone on its line, so "$(thymos url ID --header)" is one argument.
    const header = await runThymos(['url', 'elder_rowan', '--header'], ws.dir);
    assert.equal(header.code, 0, header.stderr);
    assert.equal(
      header.stdout.trim(),
      `Authorization: Bearer ${readFileSync(join(data, 'agents', 'elder_rowan', 'mcp-token'), 'utf8').trim()}`,
    );
    const bare = await fetch(url.stdout.trim(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    assert.equal(bare.status, 401, 'and refuses a request without it');
    const tools = await (await fleet.agent('elder_rowan')).listTools();
    assert.ok(tools.tools.some((t) => t.name === 'remember'));

    const logs = await runThymos(['logs', 'elder_rowan', '--lines', '200'], ws.dir);
    assert.match(logs.stdout, /agent ready on http:\/\/127\.0\.0\.1:\d+\/mcp/);
    assert.doesNotMatch(logs.stdout, /spare ready/, 'the spare’s own lines stay in its pool log');

    const mine = join(data, 'agents', 'elder_rowan');
    const agentFiles = openFiles(row.pid!).filter((f) => f.startsWith(join(data, 'agents')));
    assert.ok(agentFiles.length > 0, 'it holds its database');
    assert.deepEqual(
      agentFiles.filter((f) => !f.startsWith(`${mine}/`)),
      [],
      'it holds no other agent’s files',
    );
    // The embedded engine keeps a closed database's files open until the process exits (surrealdb.js#592):
    // the rehearsal's own, already deleted, are all that may be left of it.
    const rehearsal = openFiles(row.pid!).filter((f) => f.includes('.warm'));
    assert.deepEqual(
      rehearsal.filter((f) => !(f.startsWith(join(data, 'run', 'pool', `${first.spare}.warm`)) && f.endsWith('(deleted)'))),
      [],
      'only its own rehearsal, deleted',
    );
    assert.match(
      readFileSync(join(data, 'logs', 'pool', `${first.spare}.log`), 'utf8'),
      /"steps":\["initialize","remember","recall","talk","end"\].*"msg":"rehearsed"/,
    );

    assert.deepEqual((await fleet.reconcile(sleepAgent('elder_rowan'))).failed, []);
    await eventually(() => (alive(row.pid!) ? undefined : true), 20_000, 'the process that was elder_rowan to exit');
    assert.deepEqual((await fleet.reconcile(wake('elder_rowan'))).failed, []);
    const again = (await fleet.status()).agents.find((a) => a.id === 'elder_rowan')!;
    assert.notEqual(again.pid, row.pid, 'a new process: a spare serves one agent');
    assert.equal(again.port, row.port, 'the same port across wakes');
  });

  test('a spare killed while it waits is replaced; one killed with a claim in flight leaves the wake to a cold start', async () => {
    const { fleet } = tf;
    await poolReady(fleet, 2);
    const [victim, victimPid] = [...(await readySpares(pm, data)).entries()][0]!;
    process.kill(victimPid, 'SIGKILL');
    await eventually(
      async () => {
        const ready = await readySpares(pm, data);
        return ready.size === 2 && !ready.has(victim) && !(await pm.list()).some((a) => a.name === victim) ? true : undefined;
      },
      60_000,
      'the killed spare replaced',
    );

    await poolReady(fleet, 2);
    // Frozen, a spare takes the claim into its socket and never answers; killed, it is gone with it.
    const spares = await readySpares(pm, data);
    for (const pid of spares.values()) process.kill(pid, 'SIGSTOP');
    const pending = fleet.reconcile(wake('bram_smith'));
    // The supervisor leaves the claim on disk just before it sends it.
    await eventually(() => (existsSync(join(data, 'run', 'bram_smith.claim.json')) ? true : undefined), 20_000, 'the claim to be sent');
    for (const pid of spares.values()) process.kill(pid, 'SIGKILL');
    const report = await pending;
    assert.deepEqual(report.failed, []);
    assert.deepEqual(report.started, ['bram_smith']);
    const row = (await fleet.status()).agents.find((a) => a.id === 'bram_smith')!;
    assert.ok(row.pid && alive(row.pid));
    assert.ok(![...spares.values()].includes(row.pid), 'not one of the killed spares');
    assert.equal((await pm.list()).filter((a) => a.name === 'agent-bram_smith').length, 1, 'one bram_smith in pm2');
    await (await fleet.agent('bram_smith')).listTools();
  });

  test('a claimed agent killed with -9 comes back as itself through pm2, once', async () => {
    const { fleet } = tf;
    await poolReady(fleet, 1);
    assert.deepEqual((await fleet.reconcile(wake('mira_herbalist'))).failed, []);
    assert.ok(startLines(data, 'mira_herbalist').at(-1)?.spare, 'mira_herbalist woke in a spare');
    const before = (await fleet.status()).agents.find((a) => a.id === 'mira_herbalist')!;
    process.kill(before.pid!, 'SIGKILL');
    const after = await eventually(
      async () => {
        const app = (await pm.list()).find((a) => a.name === 'agent-mira_herbalist');
        return app?.status === 'online' && app.pid && app.pid !== before.pid && app.restarts >= 1 ? app : undefined;
      },
      60_000,
      'pm2 to restart mira_herbalist',
    );
    const tools = await eventually(
      async () => {
        const client = await fleet.agent('mira_herbalist');
        return (await client.listTools()).tools;
      },
      30_000,
      'the restarted mira_herbalist to answer',
    );
    assert.ok(tools.length > 0);
    const lock = Number(readFileSync(join(data, 'agents', 'mira_herbalist', 'agent.pid'), 'utf8'));
    assert.equal(lock, after.pid, 'the restarted process holds the agent’s lock');
    assert.equal((await fleet.agentUrl('mira_herbalist')).port, before.port, 'on its port');
    const running = [...fleetPids(data).apps.values()].filter((p) => p === before.pid && alive(p));
    assert.deepEqual(running, [], 'the killed process is gone');
  });
});

describe('a pool of one', () => {
  const suite = suiteFleet(['[supervisor]', 'pool_size = 1', '[lifecycle]', 'min_dwell_ms = 0']);

  test('two wakes in one reconcile: one takes the spare, the other starts cold; down leaves no spare behind', async () => {
    const tf = suite();
    const data = join(tf.ws.dir, 'data');
    const pm = await ProcessManager.connect(join(data, 'pm2'));
    try {
      await poolReady(tf.fleet, 1);
      const report = await tf.fleet.reconcile({ agents: { elder_rowan: { relevance: 1 }, bram_smith: { relevance: 1 } } });
      assert.deepEqual(report.failed, []);
      const spares = ['elder_rowan', 'bram_smith'].map((id) => startLines(data, id).at(-1)?.spare ?? null);
      assert.equal(spares.filter(Boolean).length, 1, `one from the pool: ${JSON.stringify(spares)}`);
      await eventually(async () => ((await readySpares(pm, data)).size === 1 ? true : undefined), 60_000, 'the pool refilled');

      // A supervisor killed while a spare waits: pm2 restarts it, and the new one replaces the spare.
      const [oldSpare, oldPid] = [...(await readySpares(pm, data)).entries()][0]!;
      const supervisorPid = (await tf.fleet.status()).supervisor.pid;
      process.kill(supervisorPid, 'SIGKILL');
      await eventually(
        async () => {
          const ready = await readySpares(pm, data);
          return ready.size === 1 && !ready.has(oldSpare) && !alive(oldPid) ? true : undefined;
        },
        60_000,
        'the restarted supervisor to replace the spare',
      );
      const status = await eventually(
        async () => {
          const s = await tf.fleet.status();
          return s.supervisor.pid !== supervisorPid ? s : undefined;
        },
        30_000,
        'the restarted supervisor to answer',
      );
      assert.deepEqual(
        status.agents
          .filter((a) => a.pid)
          .map((a) => a.id)
          .sort(),
        ['bram_smith', 'elder_rowan'],
        'it adopted the agents that were spares',
      );
    } finally {
      pm.disconnect();
    }
    const pids = [...fleetPids(data).apps.values()];
    await tf.fleet.close();
    const down = await runThymos(['down'], tf.ws.dir);
    assert.equal(down.code, 0, down.stderr);
    await eventually(() => (pids.some(alive) ? undefined : true), 20_000, 'every process of the fleet, spares included, to exit');
  });
});
