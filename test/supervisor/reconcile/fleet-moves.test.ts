import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import type { Fleet } from '../../../client/fleet-client.js';
import { Pm2Names } from '../../../shared/config/fleet-paths.js';
import type { ProgressMessage } from '../../../shared/protocol/supervisor-protocol.js';
import { alive, suiteFleet } from '../../helpers/fleet.js';

const force = (ups: string[], downs: string[]) => ({
  agents: Object.fromEntries([...ups.map((id) => [id, { relevance: 1 }]), ...downs.map((id) => [id, { relevance: 0.2 }])]),
});

/**
 * Samples the agent processes of one workspace while `during` runs, from /proc: a process counts
 * from the moment pm2 forks it (its command line names the workspace's thymos.toml), long before
 * pm2 writes its pid file, and until it has exited. The most alive at once, and the agents seen
 * with two processes at once.
 */
async function processesDuring(configPath: string, during: Promise<unknown>): Promise<{ most: number; twice: string[] }> {
  let most = 0;
  const twice = new Set<string>();
  let finished = false;
  void during.finally(() => (finished = true)).catch(() => undefined);
  while (!finished) {
    const perAgent = new Map<string, number>();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
        const at = args.indexOf('--agent-id');
        if (at >= 0 && args.includes(configPath) && alive(Number(name)))
          perAgent.set(args[at + 1]!, (perAgent.get(args[at + 1]!) ?? 0) + 1);
      } catch {
        // gone meanwhile
      }
    }
    most = Math.max(
      most,
      [...perAgent.values()].reduce((a, b) => a + b, 0),
    );
    for (const [id, n] of perAgent) if (n > 1) twice.add(id);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await during;
  return { most, twice: [...twice] };
}

async function distinctPorts(fleet: Fleet): Promise<void> {
  const running = (await fleet.status()).agents.filter((a) => a.port !== null);
  assert.equal(new Set(running.map((a) => a.port)).size, running.length, `ports: ${JSON.stringify(running.map((a) => [a.id, a.port]))}`);
}

describe('a reconcile runs moves up beside moves down', () => {
  describe('with room to spare', () => {
    const tf = suiteFleet(['[lifecycle]', 'min_dwell_ms = 0', 'max_running = 6', 'max_active = 6']);

    test('with places to spare, the agents coming up start first and those going down stop once they are up', async () => {
      const { fleet } = tf();
      const first = await fleet.reconcile(force(['elder_rowan', 'bram_smith'], []));
      assert.deepEqual(first.failed, []);
      const seen: Array<ProgressMessage & { at: number }> = [];
      const t0 = performance.now();
      const report = await fleet.reconcile(force(['mira_herbalist', 'tomas_innkeeper'], ['elder_rowan', 'bram_smith']), {
        onProgress: (p) => seen.push({ ...p, at: performance.now() - t0 }),
      });
      assert.deepEqual(report.failed, []);
      assert.deepEqual(report.started, ['mira_herbalist', 'tomas_innkeeper']);
      assert.deepEqual(report.stopped, ['bram_smith', 'elder_rowan']);
      const downs = seen.filter((p) => /→ dormant$/.test(p.step));
      const ups = seen.filter((p) => /→ active$/.test(p.step));
      assert.equal(downs.length, 2);
      assert.equal(ups.length, 2);
      // Progress comes in the order the moves end, over one connection.
      assert.deepEqual(
        seen.map((p) => (/→ active$/.test(p.step) ? 'up' : 'down')),
        ['up', 'up', 'down', 'down'],
        'both wakes end before either stop',
      );
      const lastUpEnded = Math.max(...ups.map((p) => p.at));
      const firstDownBegan = Math.min(...downs.map((p) => p.at - p.ms));
      assert.ok(
        firstDownBegan > lastUpEnded - 50,
        `a stop began at ${firstDownBegan.toFixed(0)} ms, well before the last start ended at ${lastUpEnded.toFixed(0)} ms`,
      );
      await distinctPorts(fleet);
    });

    test('the supervisor and every agent keep their compiled handlers between events: pm2 runs them with the idle-process Node flags', async () => {
      const { fleet, ws } = tf();
      const agent = (await fleet.status()).agents.find((a) => a.pid !== null);
      assert.ok(agent, 'a running agent');
      // pm2 overwrites a process's command line with its title, so its own record says what it ran.
      type Described = Array<{ pm2_env?: { node_args?: string[] } }>;
      type Pm2 = {
        connect(cb: (err?: Error | null) => void): void;
        describe(name: string, cb: (err: Error | null, found: Described) => void): void;
        disconnect(): void;
      };
      const { default: pm2Module } = (await import('pm2')) as unknown as { default: { custom: new (opts: { pm2_home: string }) => Pm2 } };
      const pm2 = new pm2Module.custom({ pm2_home: join(ws.dir, 'data', 'pm2') });
      await new Promise<void>((resolve, reject) => pm2.connect((err) => (err ? reject(err) : resolve())));
      try {
        const nodeArgs = (name: string) =>
          new Promise<string[]>((resolve, reject) =>
            pm2.describe(name, (err, found) => (err ? reject(err) : resolve(found[0]?.pm2_env?.node_args ?? []))),
          );
        assert.deepEqual(await nodeArgs(Pm2Names.supervisor), ['--no-flush-bytecode']);
        assert.deepEqual(await nodeArgs(Pm2Names.agent(agent.id)), [
          '--no-flush-bytecode',
          '--max-semi-space-size=1',
          '--regexp-tier-up-ticks=100',
        ]);
      } finally {
        pm2.disconnect();
      }
    });
  });

  describe('at the running limit', () => {
    const tf = suiteFleet(['[lifecycle]', 'min_dwell_ms = 0', 'max_running = 2', 'max_active = 2']);

    test('a start waits for the place a stop frees: never more agents running than max_running, never one port twice', async () => {
      const { fleet, ws } = tf();
      const first = await fleet.reconcile(force(['elder_rowan', 'bram_smith'], []));
      assert.deepEqual(first.failed, []);
      for (const [ups, downs] of [
        [
          ['mira_herbalist', 'tomas_innkeeper'],
          ['elder_rowan', 'bram_smith'],
        ],
        [
          ['elder_rowan', 'captain_lysa'],
          ['mira_herbalist', 'tomas_innkeeper'],
        ],
      ] as const) {
        const reconcile = fleet.reconcile(force([...ups], [...downs]));
        const { most } = await processesDuring(ws.configPath, reconcile);
        const report = await reconcile;
        assert.deepEqual(report.failed, []);
        assert.deepEqual(report.started, [...ups].sort());
        assert.deepEqual(report.stopped, [...downs].sort());
        assert.ok(most <= 2, `${most} agent processes alive at once; max_running is 2`);
        await distinctPorts(fleet);
      }
    });
  });

  describe('answering after the wakes', () => {
    const tf = suiteFleet(['[lifecycle]', 'min_dwell_ms = 0', 'max_running = 2', 'max_active = 2']);
    const all = ['elder_rowan', 'bram_smith', 'mira_herbalist', 'tomas_innkeeper', 'captain_lysa', 'old_fenn'];
    const only = (ups: string[]) =>
      force(
        ups,
        all.filter((a) => !ups.includes(a)),
      );

    test('a reconcile that returns after its wakes: its stops end after it; the next one waits for them and reports them; no agent runs twice nor past max_running', async () => {
      const { fleet, ws } = tf();
      assert.deepEqual((await fleet.reconcile(only(['elder_rowan']))).failed, []);
      const steps = (async () => {
        const first = await fleet.reconcile(only(['bram_smith']), { returnAfterWakes: true });
        // elder_rowan is still stopping: bring it straight back, with one more than there are places for.
        const second = await fleet.reconcile(only(['elder_rowan', 'mira_herbalist']), { returnAfterWakes: true });
        const third = await fleet.reconcile(only(['elder_rowan', 'mira_herbalist']));
        return { first, second, third };
      })();
      const seen = await processesDuring(ws.configPath, steps);
      const { first, second, third } = await steps;
      assert.deepEqual(
        [first.started, first.stopped, first.pending, first.failed],
        [['bram_smith'], [], ['elder_rowan'], []],
        'answered while elder_rowan stops',
      );
      assert.deepEqual(
        second.settled,
        { stopped: ['elder_rowan'], downgraded: [], archived: [], failed: [] },
        'the stop the first left running, reported to the next caller',
      );
      assert.deepEqual(
        [second.started, second.stopped, second.pending, second.failed],
        [['elder_rowan', 'mira_herbalist'], ['bram_smith'], undefined, []],
        'a wake that needs the place a stop frees waits for it',
      );
      assert.deepEqual([third.started, third.stopped, third.settled], [[], [], undefined], 'settled is told once');
      assert.ok(seen.most <= 2, `${seen.most} agent processes alive at once; max_running is 2`);
      assert.deepEqual(seen.twice, [], 'no agent had two processes at once');
      await distinctPorts(fleet);
    });

    test("a stop that fails after the answer reaches the next report's settled; the agent stays where it was", async () => {
      const { fleet } = tf();
      const pid = (await fleet.status()).agents.find((a) => a.id === 'mira_herbalist')?.pid;
      assert.ok(pid, 'mira_herbalist runs');
      // Frozen, it cannot acknowledge the snapshot a stop asks for.
      process.kill(pid, 'SIGSTOP');
      try {
        const answered = await fleet.reconcile(only(['elder_rowan']), { returnAfterWakes: true });
        assert.deepEqual([answered.stopped, answered.pending, answered.failed], [[], ['mira_herbalist'], []]);
        const next = await fleet.reconcile(only(['elder_rowan', 'mira_herbalist']));
        assert.equal(next.settled?.failed.length, 1, JSON.stringify(next.settled));
        assert.equal(next.settled.failed[0]!.id, 'mira_herbalist');
        assert.equal(next.settled.failed[0]!.code, 'SNAPSHOT_FAILED');
        assert.deepEqual(next.settled.stopped, []);
        const row = (await fleet.status()).agents.find((a) => a.id === 'mira_herbalist');
        assert.equal(row?.pid, pid, 'still the same process');
        assert.equal(row?.last_error?.code, 'SNAPSHOT_FAILED');
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      const stopped = await fleet.reconcile(only([]));
      assert.deepEqual([[...stopped.stopped], stopped.failed], [['elder_rowan', 'mira_herbalist'], []], 'thawed, it stops');
    });
  });
});
