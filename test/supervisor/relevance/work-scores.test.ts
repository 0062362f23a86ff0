import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { LifecycleSettingsSchema } from '../../../shared/config/fleet-settings.js';
import { parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import type { SkillBacklog } from '../../../shared/protocol/job.js';
import { stateForScore } from '../../../supervisor/reconcile/decide-states.js';
import { type WorkerState, WorkScores } from '../../../supervisor/relevance/work-scores.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

const lifecycle = LifecycleSettingsSchema.parse({});

describe('relevance from the work waiting', () => {
  test('scores: any work wakes, more or older work ranks higher, a lull falls through Listening to Dormant, never Archived', async () => {
    const domain = parseDomainSchema(
      {
        queues: { support: {} },
        workRelevance: { fullBacklog: 10, urgentAfterMs: 60_000, lullHalfLifeMs: 1000, keepActiveMs: 0, everyMs: 250 },
        agents: { desk: { persona: { name: 'Desk' }, skills: ['orders', 'billing'] }, bard: { persona: { name: 'Bard' } } },
      },
      'x.json',
    );
    let rows: SkillBacklog[] = [];
    const row = (skill: string, waiting: number, oldest = 0): SkillBacklog => ({
      queue: 'support',
      skill,
      waiting,
      in_progress: 0,
      oldest_ms: oldest,
      delivered: 0,
      served: true,
    });
    const scores = new WorkScores({
      domain,
      settings: domain.workRelevance!,
      lifecycle,
      backlog: async () => rows,
      logger: createLogger({ level: 'silent' }),
    });
    assert.deepEqual([...scores.workers], ['desk']);
    assert.equal(scores.score('desk', 0), undefined, 'nothing read yet');
    await scores.refresh(0);
    assert.equal(stateForScore(scores.score('desk', 0)!, lifecycle), 'dormant', 'no work since start: asleep');
    assert.equal(scores.score('bard', 0), undefined, 'takes no jobs: scored by the other sources');
    rows = [row('orders', 1)];
    await scores.refresh(1000);
    const one = scores.score('desk', 1000)!;
    assert.ok(one > lifecycle.threshold_active + lifecycle.hysteresis, `one job wakes it past the hysteresis (${one})`);
    rows = [row('orders', 5)];
    await scores.refresh(2000);
    assert.ok(scores.score('desk', 2000)! > one);
    rows = [row('billing', 1, 60_000)];
    await scores.refresh(3000);
    assert.equal(scores.score('desk', 3000), 1, 'an old job is urgent');
    rows = [];
    await scores.refresh(3000);
    // billing had work last at 3000: kept until the next read (everyMs), then 0.69, halving every second.
    const states = [3000, 3250, 3650, 3850, 4450, 20_000].map((t) => stateForScore(scores.score('desk', t)!, lifecycle));
    assert.deepEqual(states, ['active', 'listening', 'listening', 'listening', 'dormant', 'dormant']);
  });

  test('a flow of jobs each done between two reads keeps the workers Active for keepActiveMs after the last; then the lull', async () => {
    const domain = parseDomainSchema(
      {
        queues: { support: {} },
        workRelevance: { lullHalfLifeMs: 1000, keepActiveMs: 5000 },
        agents: { desk: { persona: { name: 'Desk' }, skills: ['orders'] } },
      },
      'x.json',
    );
    let delivered = 0;
    const scores = new WorkScores({
      domain,
      settings: domain.workRelevance!,
      lifecycle,
      backlog: async () => [{ queue: 'support', skill: 'orders', waiting: 0, in_progress: 0, oldest_ms: 0, delivered, served: true }],
      logger: createLogger({ level: 'silent' }),
    });
    const state = (t: number) => stateForScore(scores.score('desk', t)!, lifecycle);
    await scores.refresh(0);
    assert.equal(state(0), 'dormant', 'deliveries made before the supervisor first read them are not work now');
    // Each read sees an empty backlog, but jobs were taken in between.
    for (const t of [1000, 2000, 3000]) {
      delivered += 2;
      await scores.refresh(t);
      assert.equal(state(t), 'active', `jobs taken between the reads before ${t} ms`);
    }
    await scores.refresh(4000);
    assert.equal(state(4000), 'active', 'none since, but within keepActiveMs of the last');
    assert.equal(state(7999), 'active');
    assert.deepEqual(
      [8000, 8200, 11_000].map(state),
      ['listening', 'listening', 'dormant'],
      'past keepActiveMs: just under threshold_active, halving every second',
    );
    delivered += 1;
    await scores.refresh(12_000);
    assert.equal(state(12_000), 'active', 'one job taken wakes them again');
  });

  test('a skill wakes as many workers as its jobs need, those up first, a worker whose start failed last; the rest stay asleep', async () => {
    const domain = parseDomainSchema(
      {
        queues: { support: {} },
        workRelevance: { fullBacklog: 10, keepActiveMs: 2000, lullHalfLifeMs: 1000 },
        agents: Object.fromEntries(['w1', 'w2', 'w3', 'w4'].map((id) => [id, { persona: { name: id }, skills: ['orders'] }])),
      },
      'x.json',
    );
    let rows: SkillBacklog[] = [];
    const entries = new Map<string, WorkerState>();
    const backlog = (waiting: number, in_progress = 0, delivered = 0): SkillBacklog[] => [
      { queue: 'support', skill: 'orders', waiting, in_progress, oldest_ms: 0, delivered, served: true },
    ];
    const scores = new WorkScores({
      domain,
      settings: domain.workRelevance!,
      lifecycle,
      backlog: async () => rows,
      logger: createLogger({ level: 'silent' }),
      concurrency: 2,
      entry: (id) => entries.get(id),
    });
    const states = (t: number) => ['w1', 'w2', 'w3', 'w4'].map((id) => stateForScore(scores.score(id, t)!, lifecycle));
    rows = backlog(1);
    await scores.refresh(0);
    assert.deepEqual(states(0), ['active', 'dormant', 'dormant', 'dormant'], 'one job: one worker, the first by id');
    rows = backlog(3, 2);
    await scores.refresh(500);
    assert.deepEqual(states(500), ['active', 'active', 'active', 'dormant'], 'five jobs, two at once each: three workers');
    rows = backlog(40);
    await scores.refresh(1000);
    assert.deepEqual(states(1000), ['active', 'active', 'active', 'active'], 'never more than the skill has');
    rows = backlog(0, 1, 2);
    await scores.refresh(1500);
    assert.deepEqual(
      states(1500),
      ['active', 'active', 'active', 'active'],
      'one needed now, the others within keepActiveMs of being needed',
    );
    assert.deepEqual(
      states(3100),
      ['active', 'listening', 'listening', 'listening'],
      'past keepActiveMs the ranks not needed since listen',
    );
    // w3 is up and w1 asleep: the one up is taken first; a worker whose last start failed comes last.
    entries.set('w3', { state: 'active', last_error: null });
    entries.set('w1', { state: 'dormant', last_error: { code: 'START_FAILED', message: 'x' } });
    rows = backlog(2, 0, 2);
    await scores.refresh(10_000);
    assert.deepEqual(states(10_000), ['dormant', 'dormant', 'active', 'dormant'], 'w3 (up) is the one');
    rows = backlog(6, 0, 2);
    await scores.refresh(10_500);
    assert.deepEqual(states(10_500), ['dormant', 'active', 'active', 'active'], 'then w2 and w4; w1, whose start failed, last');
  });

  test('once it knows how long its jobs take, a skill needs only as many workers as finish what waits within one read, never fewer than hold jobs', async () => {
    const ids = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6'];
    const domain = parseDomainSchema(
      {
        queues: { support: {} },
        workRelevance: { everyMs: 500, keepActiveMs: 0 },
        agents: Object.fromEntries(ids.map((id) => [id, { persona: { name: id }, skills: ['orders'] }])),
      },
      'x.json',
    );
    let rows: SkillBacklog[] = [];
    const backlog = (waiting: number, in_progress: number, delivered: number): SkillBacklog[] => [
      { queue: 'support', skill: 'orders', waiting, in_progress, oldest_ms: 0, delivered, served: true },
    ];
    const scores = new WorkScores({
      domain,
      settings: domain.workRelevance!,
      lifecycle,
      backlog: async () => rows,
      logger: createLogger({ level: 'silent' }),
    });
    const awake = (t: number) => ids.filter((id) => stateForScore(scores.score(id, t)!, lifecycle) === 'active').length;
    rows = backlog(6, 0, 0);
    await scores.refresh(0);
    assert.equal(awake(0), 6, 'how long a job takes is not known yet: one worker a job');
    // Reads 500 ms apart: 10 jobs taken between each, one in hand at each read: 500 ms of worker time for 10 jobs, 50 ms a job.
    for (let i = 1; i <= 3; i++) {
      rows = backlog(0, 1, i * 10);
      await scores.refresh(i * 500);
    }
    rows = backlog(20, 0, 30);
    await scores.refresh(2000);
    assert.equal(awake(2000), 2, '20 jobs of 50 ms: 1 s of work, two workers finish it within a read');
    rows = backlog(0, 5, 40);
    await scores.refresh(2500);
    assert.equal(awake(2500), 5, 'five jobs in hand: five workers hold them, none is put to sleep');
  });

  test('a worker is never put to listen while a job it may hold is in hand past a read; a count of deliveries that went back measures nothing; a pinned worker or a skill named twice does not take a rank', async () => {
    const ids = ['w1', 'w2', 'w3', 'w4'];
    const agents = Object.fromEntries(
      ids.map((id) => [id, { persona: { name: id }, skills: id === 'w2' ? ['orders', 'orders'] : ['orders'] }]),
    );
    const domain = parseDomainSchema(
      { queues: { support: {} }, workRelevance: { everyMs: 500, keepActiveMs: 1000, lullHalfLifeMs: 1000 }, agents },
      'x.json',
    );
    let rows: SkillBacklog[] = [];
    const up = new Set(['w1', 'w2', 'w3']);
    const backlog = (waiting: number, in_progress: number, delivered: number, oldest_ms = 0): SkillBacklog[] => [
      { queue: 'support', skill: 'orders', waiting, in_progress, oldest_ms, delivered, served: true },
    ];
    const scores = new WorkScores({
      domain,
      settings: domain.workRelevance!,
      lifecycle,
      backlog: async () => rows,
      logger: createLogger({ level: 'silent' }),
      entry: (id) => ({ state: up.has(id) ? 'active' : 'dormant', last_error: null }),
      pins: new Map([['w4', 'listening' as const]]),
    });
    const states = (t: number) => ids.map((id) => stateForScore(scores.score(id, t)!, lifecycle));
    rows = backlog(3, 0, 0);
    await scores.refresh(0);
    assert.deepEqual(
      states(0),
      ['active', 'active', 'active', 'dormant'],
      'three jobs, three workers; w2 counted once; w4 pinned to listen takes no rank before them',
    );
    // w1 and w2 are done; w3 still holds its job, long past a read: all three up are kept, whichever holds it.
    for (let t = 500; t <= 20_000; t += 500) {
      rows = backlog(0, 1, 3, t);
      await scores.refresh(t);
    }
    assert.deepEqual(states(20_000), ['active', 'active', 'active', 'dormant'], 'a job in hand for 20 s: no worker up is put to listen');
    rows = backlog(0, 0, 3);
    await scores.refresh(20_500);
    assert.deepEqual(states(21_300), ['listening', 'listening', 'listening', 'dormant'], 'done: the lull');
    // The consumer made again: its count starts from 0. Nothing is counted as taken, then deliveries count again.
    rows = backlog(0, 0, 0);
    await scores.refresh(60_000);
    rows = backlog(0, 0, 0);
    await scores.refresh(60_500);
    assert.deepEqual(states(60_500).slice(0, 3), ['dormant', 'dormant', 'dormant'], 'a count that went back is no flow of jobs');
    rows = backlog(0, 0, 1);
    await scores.refresh(61_000);
    assert.equal(states(61_000)[0], 'active', 'a job taken since: one worker');
    assert.throws(() => {
      scores.start(async () => undefined);
      scores.start(async () => undefined);
    }, /started already/);
    await scores.stop();
  });

  test('stopped while a round reads the backlog (the fleet going down), it wakes nobody, and stop waits for that round', async () => {
    const domain = parseDomainSchema(
      { queues: { support: {} }, workRelevance: { everyMs: 250 }, agents: { desk: { persona: { name: 'Desk' }, skills: ['orders'] } } },
      'x.json',
    );
    let release!: (rows: SkillBacklog[]) => void;
    let reads = 0;
    const backlog = () => {
      reads++;
      return new Promise<SkillBacklog[]>((r) => (release = r));
    };
    const scores = new WorkScores({
      domain,
      settings: domain.workRelevance!,
      lifecycle,
      backlog,
      logger: createLogger({ level: 'silent' }),
    });
    const reconciled: string[][] = [];
    scores.start(async (only) => void reconciled.push([...only]));
    await eventually(() => (reads === 1 ? true : undefined), 5000, 'the first round to read the backlog');
    let stopped = false;
    const stopping = scores.stop().then(() => (stopped = true));
    await Promise.resolve();
    assert.equal(stopped, false, 'stop waits for the round under way');
    release([{ queue: 'support', skill: 'orders', waiting: 3, in_progress: 0, oldest_ms: 0, delivered: 0, served: true }]);
    await stopping;
    assert.deepEqual(reconciled, [], 'work was waiting, but the rounds were stopped: no worker woken');
    assert.equal(reads, 1, 'no round after stop');
  });

  describe('on a fleet', () => {
    let tf: TestFleet;
    const dir = mkdtempSync(join(tmpdir(), 'thymos-desk-'));
    before(async () => {
      writeFileSync(join(dir, 'desk.mjs'), 'export function lookup(input) { return { order: input.order_id, status: "shipped" }; }\n');
      writeFileSync(
        join(dir, 'desk.pkl'),
        `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] {} }
workRelevance { everyMs = 300; lullHalfLifeMs = 5000; fullBacklog = 2 }
agents {
  ["desk"] { persona { name = "Desk" }; skills { "orders" }; capabilities { "lookup_order" } }
  ["bard"] { persona { name = "Bard" } }
}
tools {
  ["lookup_order"] {
    description = "Look up where an order is and whether it has shipped"
    examples { "where is my order ORD-12345"; "has order ORD-12345 shipped yet" }
    input { ["order_id"] { pattern = #"ORD-\\d{5}"# } }
    sideEffect = "read_only"
    executor = new Script { path = "desk.mjs"; export = "lookup" }
  }
}
`,
      );
      tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'pool_size = 1'], { schema: join(dir, 'desk.pkl') });
    });
    after(async () => {
      await tf?.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a burst wakes the Dormant worker from the warm pool, which does the work; the lull puts it to Listening, then Dormant; the other agent is left alone', async () => {
      const { fleet } = tf;
      await fleet.start('bard');
      const state = async (id: string) => (await fleet.status()).agents.find((a) => a.id === id)!;
      assert.equal((await state('desk')).state, 'dormant');
      await eventually(
        async () => ((await fleet.status()).supervisor.pool?.ready ?? 0) >= 1 || undefined,
        60_000,
        'a spare ready in the pool',
      );
      for (const n of [11111, 22222, 33333]) await fleet.jobs.publish('support', 'orders', { text: `Where is my order ORD-${n}?` });
      await eventually(async () => ((await state('desk')).state === 'active' ? true : undefined), 60_000, 'the burst to wake desk');
      assert.equal((await state('desk')).source, 'work');
      const started = readFileSync(join(tf.ws.dir, 'data', 'logs', 'supervisor.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('"agent started"') && l.includes('"agent":"desk"'));
      assert.match(started.at(-1) ?? '', /"spare":"[^"]+"/, 'woken from the pool');
      await eventually(
        async () => {
          const b = (await fleet.jobs.list()).find((r) => r.skill === 'orders')!;
          return b.waiting + b.in_progress === 0 ? true : undefined;
        },
        60_000,
        'the work to be done',
      );
      await eventually(async () => ((await state('desk')).state === 'dormant' ? true : undefined), 60_000, 'the lull to put desk to sleep');
      const moves = (await fleet.history('desk')).reverse().map((t) => t.to);
      assert.deepEqual(moves.slice(-3), ['active', 'listening', 'dormant'], JSON.stringify(moves));
      assert.equal((await state('bard')).state, 'active', 'an agent without skills is not moved by the work rounds');
    });
  });
});
