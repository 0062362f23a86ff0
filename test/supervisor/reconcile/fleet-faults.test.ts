import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';

import type { Fleet } from '../../../client/fleet-client.js';
import type { ThymosError } from '../../../shared/errors/errors.js';
import type { FleetStatus } from '../../../shared/protocol/supervisor-protocol.js';
import { agentProcesses, hammerWithKills } from '../../helpers/faults.js';
import { alive, eventually, fleetPids, startTestFleet, type TestFleet } from '../../helpers/fleet.js';

let testFleet: TestFleet | undefined;
let fleet: Fleet;
let data: string;
const states = (s: FleetStatus) => Object.fromEntries(s.agents.map((a) => [a.id, a.state]));
const structured = <T>(r: unknown) => (r as { structuredContent: T }).structuredContent;

async function memoryCount(id: string): Promise<number> {
  const client = await fleet.agent(id);
  return structured<{ memory_count: number }>(await client.callTool({ name: `get_${id}_state`, arguments: {} })).memory_count;
}

/** The pid pm2 runs an app with, from its pid file (`agent_x` becomes `agent-x`). */
function appPid(name: string): number | undefined {
  return fleetPids(data).apps.get(name.replaceAll('_', '-'));
}

describe('faults on a real fleet: kills, a broker restart, damaged and unwritable data', () => {
  before(async () => {
    testFleet = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'concurrency = 1']);
    fleet = testFleet.fleet;
    data = join(testFleet.ws.dir, 'data');
  });

  after(async () => {
    await testFleet?.dispose();
  });

  test('kill -9 of agents again and again while a client writes memories: every acknowledged write is kept, each agent comes back', async () => {
    const ids = ['elder_rowan', 'bram_smith'];
    await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 }, bram_smith: { relevance: 1 } } });
    const result = await hammerWithKills({
      fleet,
      ids,
      kills: 4,
      pidOf: async (id) => (await fleet.status()).agents.find((a) => a.id === id)?.pid,
      backTimeoutMs: 60_000,
    });
    assert.equal(result.kills, 4);
    assert.ok(result.acked.length >= 20, `writes acknowledged: ${result.acked.length}`);
    assert.ok(result.failedWrites > 0, 'some writes were refused while an agent was down (the kills landed mid-stream)');
    for (const id of ids) {
      const client = await fleet.agent(id);
      for (const w of result.acked.filter((a) => a.id === id)) {
        const hits = structured<{ results: Array<{ id: string; content: string }> }>(
          await client.callTool({ name: 'recall', arguments: { query: w.word, k: 3 } }),
        ).results;
        assert.ok(
          hits.some((h) => h.id === w.memoryId && h.content.includes(w.word)),
          `${id} lost acknowledged write ${w.word} (${w.memoryId})`,
        );
      }
    }
    const status = await fleet.status();
    for (const id of ids) {
      const row = status.agents.find((a) => a.id === id)!;
      assert.equal(row.state, 'active');
      assert.ok(row.restarts >= 1, `${id} was restarted by pm2 (${row.restarts})`);
      assert.equal(agentProcesses(data, id).length, 1, `${id} runs once`);
    }
  });

  test('kill -9 of the supervisor in the middle of a reconcile: pm2 restarts it, it adopts the fleet and finishes the reconcile; no agent runs twice', async () => {
    const supervisorBefore = (await fleet.status()).supervisor.pid;
    const target = { elder_rowan: 0.2, bram_smith: 0.2, mira_herbalist: 1, tomas_innkeeper: 1, captain_lysa: 1, old_fenn: 0.2 };
    const expected = {
      elder_rowan: 'dormant',
      bram_smith: 'dormant',
      mira_herbalist: 'active',
      tomas_innkeeper: 'active',
      captain_lysa: 'active',
      old_fenn: 'dormant',
    };
    const context = { agents: Object.fromEntries(Object.entries(target).map(([id, relevance]) => [id, { relevance }])) };
    let killedAfter = -1;
    const interrupted = fleet
      .reconcile(context, {
        onProgress: (p) => {
          // concurrency = 1: the first of five moves has finished, four are still to come.
          if (killedAfter < 0) {
            killedAfter = p.done;
            process.kill(supervisorBefore, 'SIGKILL');
          }
        },
      })
      .then(
        () => 'answered',
        (err: ThymosError) => `${err.code}: ${err.message}`,
      );
    const outcome = await interrupted;
    assert.equal(killedAfter, 1);
    // The caller learns at once (not after the five-minute request timeout) that its supervisor is gone.
    assert.match(
      outcome,
      /^SUPERVISOR_LOST: the supervisor \(pid \d+\) stopped while handling reconcile .*finishes an interrupted reconcile by itself/,
    );

    const final = await eventually(
      async () => {
        const s = await fleet.status();
        return isDeepStrictEqual(states(s), expected) ? s : undefined;
      },
      240_000,
      'the restarted supervisor to finish the reconcile',
    );
    assert.notEqual(final.supervisor.pid, supervisorBefore, 'a new supervisor process');
    assert.equal(alive(supervisorBefore), false);
    for (const [id, state] of Object.entries(expected)) {
      assert.equal(
        agentProcesses(data, id).length,
        state === 'active' ? 1 : 0,
        `${id} (${state}) runs ${state === 'active' ? 'once' : 'nowhere'}`,
      );
    }
    await eventually(
      () => (existsSync(join(data, 'run', 'reconcile.pending.json')) ? undefined : true),
      60_000,
      'the journal to be removed',
    );
    const audit = readFileSync(join(data, 'logs', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { op: string; by: string; result: string; details?: Record<string, string[]> });
    const resumed = audit.find((e) => /finishing the reconcile begun/.test(e.by));
    assert.ok(resumed, 'the finished reconcile is in the audit log');
    assert.equal(resumed.op, 'reconcile');
    assert.equal(resumed.result, 'ok');
    const again = await fleet.reconcile(context);
    assert.deepEqual([again.started, again.stopped, again.failed], [[], [], []], 'nothing left to do');
  });

  test('nats-server killed and restarted by pm2: agents and supervisor reconnect; no event retained for a Dormant agent is lost', async () => {
    assert.equal(states(await fleet.status()).elder_rowan, 'dormant');
    const words = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth'];
    for (const w of words.slice(0, 3))
      await fleet.publish({
        id: `outage-${w}`,
        type: 'council.notice',
        tags: ['council'],
        payload: { summary: `The ${w} outage notice was posted` },
      });
    const natsPid = appPid('thymos-nats');
    assert.ok(natsPid);
    process.kill(natsPid, 'SIGKILL');
    const restarted = await eventually(
      () => {
        const pid = appPid('thymos-nats');
        return pid && pid !== natsPid && alive(pid) ? pid : undefined;
      },
      20_000,
      'pm2 to restart nats-server',
    );
    assert.notEqual(restarted, natsPid);
    // The client reconnects by itself; publishing waits for JetStream's acknowledgement.
    for (const w of words.slice(3)) {
      await eventually(
        () =>
          fleet.publish({
            id: `outage-${w}`,
            type: 'council.notice',
            tags: ['council'],
            payload: { summary: `The ${w} outage notice was posted` },
          }),
        20_000,
        `publishing after the restart (${w})`,
      );
    }
    // The supervisor reconnects on its own clock: the client publishing again says nothing of
    // it, and asking for an agent's address is a request to the supervisor.
    await eventually(() => fleet.status(), 30_000, 'the supervisor to answer again');
    const client = await fleet.agent('mira_herbalist');
    await eventually(
      async () =>
        structured<{ nats: string }>(await client.callTool({ name: 'get_mira_herbalist_state', arguments: {} })).nats === 'connected'
          ? true
          : undefined,
      20_000,
      'mira to reconnect',
    );
    const started = await fleet.start('elder_rowan');
    assert.deepEqual(started.started, ['elder_rowan']);
    const elder = await fleet.agent('elder_rowan');
    const heard = async () => {
      const text = (await elder.callTool({ name: 'recall', arguments: { query: 'outage notice posted', k: 20 } })).content as Array<{
        text: string;
      }>;
      return [...new Set(text[0]!.text.match(/The (\w+) outage notice/g) ?? [])].sort();
    };
    // Started within seconds of the broker's restart, the agent may find JetStream still
    // recovering: it then links up in the background rather than before it says ready.
    const expected = words.map((w) => `The ${w} outage notice`).sort();
    const found = await eventually(
      async () => ((await heard()).length === expected.length ? heard() : undefined),
      30_000,
      'every event',
    ).catch(async (err: Error) => {
      const log = readFileSync(join(data, 'logs', 'elder_rowan.log'), 'utf8')
        .split('\n')
        .filter((l) => /"level":[45]0/.test(l))
        .slice(-5)
        .join('\n');
      assert.fail(`${err.message}; heard ${JSON.stringify(await heard())}; elder's warnings:\n${log}`);
    });
    assert.deepEqual(found, expected, 'every event, from before and after the restart');
    await fleet.stop('elder_rowan');
  });

  test('one agent with a damaged database, another with an unwritable data directory: each fails with a clear error in status and its log; the rest run on', async () => {
    const running = (await fleet.status()).agents.filter((a) => a.state === 'active').map((a) => ({ id: a.id, pid: a.pid }));
    assert.ok(running.length >= 2);
    // Damage: every file of elder's database overwritten with garbage of the same size.
    const db = join(data, 'agents', 'elder_rowan', 'db');
    let damaged = 0;
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (statSync(p).size > 0) {
          writeFileSync(p, Buffer.alloc(statSync(p).size, 0xa5));
          damaged++;
        }
      }
    };
    walk(db);
    assert.ok(damaged > 0, 'the database has files to damage');
    // Unwritable: a file where old_fenn's data directory would be (root ignores permission bits).
    const fenn = join(data, 'agents', 'old_fenn');
    rmSync(fenn, { recursive: true, force: true });
    writeFileSync(fenn, 'not a directory');

    for (const [id, pattern] of [
      [
        'elder_rowan',
        /AGENT_START_FAILED: elder_rowan exited while starting.*DATABASE_ERROR: opening \S+elder_rowan\/db did not finish within \d+ ms: no other process holds it, so its files are probably damaged/s,
      ],
      [
        'old_fenn',
        /AGENT_START_FAILED: old_fenn exited while starting.*DATABASE_ERROR: cannot create the data directory \S+old_fenn of agent old_fenn: a file stands where the directory should be/s,
      ],
    ] as const) {
      const report = await fleet.start(id);
      assert.equal(report.failed.length, 1, `${id} failed`);
      assert.match(`${report.failed[0]!.code}: ${report.failed[0]!.message}`, pattern);
      const row = (await fleet.status()).agents.find((a) => a.id === id)!;
      assert.equal(row.state, 'dormant');
      assert.match(`${row.last_error?.code}: ${row.last_error?.message}`, pattern);
      assert.equal(agentProcesses(data, id).length, 0, `${id} is not left crash-looping`);
      assert.match(
        readFileSync(join(data, 'logs', `${id}.log`), 'utf8'),
        id === 'elder_rowan' ? /probably damaged/ : /a file stands where the directory should be/,
      );
    }
    const after = await fleet.status();
    for (const { id, pid } of running) {
      const row = after.agents.find((a) => a.id === id)!;
      assert.deepEqual([row.state, row.pid], ['active', pid], `${id} untouched`);
      assert.ok((await memoryCount(id)) >= 0);
    }
  });
});
