import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';

import { fleetNatsUrl } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { asFleetSupervisor, eventually, runThymos, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

type Letter = { job: { id?: string }; reason: { code: string; message: string }; attempts: number; agent: string };

/**
 * Agents that pull their own work: a support desk whose agent takes jobs of its skill, works each
 * through its tools (words resolved offline), acknowledges what is done, retries what failed with
 * the queue's back-off and gives up on the rest as dead letters. Real nats-server, real agents.
 */
describe('agents take jobs from the work queues', () => {
  let tf: TestFleet;
  let nc: NatsConnection;
  const dir = mkdtempSync(join(tmpdir(), 'thymos-desk-'));
  const calls = join(dir, 'calls.log');
  /** While this file exists, the escalation desk is closed: escalate_ticket fails. */
  const closedFlag = join(dir, 'closed');
  const called = () => (existsSync(calls) ? readFileSync(calls, 'utf8') : '');

  before(async () => {
    writeFileSync(closedFlag, '');
    writeFileSync(
      join(dir, 'desk.mjs'),
      `import { appendFileSync, existsSync } from 'node:fs';
export function lookup(input) { appendFileSync(${JSON.stringify(calls)}, 'lookup ' + input.order_id + ' at ' + Date.now() + '\\n'); return { order: input.order_id, status: 'shipped' }; }
export async function report(input) { const from = Date.now(); await new Promise((r) => setTimeout(r, 400)); appendFileSync(${JSON.stringify(calls)}, 'report ' + input.report_id + ' from ' + from + ' to ' + Date.now() + '\\n'); return { report: input.report_id }; }
export function escalate(input) { appendFileSync(${JSON.stringify(calls)}, 'escalate ' + input.ticket + '\\n'); if (existsSync(${JSON.stringify(closedFlag)})) throw new Error('the escalation desk is closed'); return { ticket: input.ticket, status: 'escalated' }; }
`,
    );
    writeFileSync(
      join(dir, 'desk.pkl'),
      `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}
queues { ["support"] { maxDeliver = 3; backoffMs { 100; 200 } } }
agents { ["desk"] { persona { name = "Desk" }; skills { "orders" }; capabilities { "lookup_order"; "escalate_ticket"; "compile_report" } } }
tools {
  ["lookup_order"] {
    description = "Look up where an order is and whether it has shipped"
    examples { "where is my order ORD-12345"; "has order ORD-12345 shipped yet"; "track my order" }
    input { ["order_id"] { pattern = #"ORD-\\d{5}"#; description = "The order, e.g. ORD-12345" } }
    sideEffect = "read_only"
    executor = new Script { path = "desk.mjs"; export = "lookup" }
  }
  ["compile_report"] {
    description = "Compile the monthly sales report"
    examples { "compile report R-1"; "put together the sales report R-2" }
    input { ["report_id"] { pattern = #"R-\\d+"#; description = "The report, e.g. R-1" } }
    sideEffect = "read_only"
    executor = new Script { path = "desk.mjs"; export = "report" }
  }
  ["escalate_ticket"] {
    description = "Escalate a support ticket to a person on the escalation desk"
    examples { "escalate ticket T-77 to a person"; "I want to speak to a human about ticket T-12" }
    input { ["ticket"] { pattern = #"T-\\d+"#; description = "The ticket, e.g. T-77" } }
    sideEffect = "writes_external"
    executor = new Script { path = "desk.mjs"; export = "escalate" }
  }
}
`,
    );
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[jobs]', 'concurrency = 2'], { schema: join(dir, 'desk.pkl') });
    nc = await connect({
      servers: fleetNatsUrl(loadConfig(tf.ws.configPath)),
      ...asFleetSupervisor(loadConfig(tf.ws.configPath).dataPath),
    });
    await tf.fleet.start('desk');
  });
  after(async () => {
    await nc?.close();
    await tf?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const deadLetters = async (): Promise<Letter[]> => {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info('THYMOS_JOBS_DEAD');
    const out: Letter[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage('THYMOS_JOBS_DEAD', { seq }).catch(() => null);
      if (m) out.push(m.json<Letter>());
    }
    return out;
  };
  const backlog = async () => (await tf.fleet.jobs.list('support')).find((r) => r.skill === 'orders')!;
  const backlogEmpty = async () => {
    const b = await backlog();
    return b.waiting === 0 && b.in_progress === 0 ? true : undefined;
  };

  test("a job is worked through the agent's tools and acknowledged: the call is made once, as the job, and the queue is empty", async () => {
    await tf.fleet.jobs.publish('support', 'orders', { text: 'Where is my order ORD-12345?' }, { id: 'J-1' });
    await eventually(() => (/lookup ORD-12345/.test(called()) ? true : undefined), 30_000, 'the lookup');
    await eventually(
      async () => {
        const b = await backlog();
        return b.waiting === 0 && b.in_progress === 0 ? true : undefined;
      },
      20_000,
      'the job to be acknowledged',
    );
    assert.equal(called().match(/lookup ORD-12345/g)?.length, 1);
    const desk = await tf.fleet.agent('desk');
    const made = await desk.callTool({ name: 'recall', arguments: { query: 'lookup_order', source: 'tool_call', k: 5 } });
    assert.match(JSON.stringify(made.structuredContent), /job:J-1/);
  });

  test('[jobs] concurrency: two jobs of one skill worked at once, never more', async () => {
    for (const n of [1, 2, 3, 4]) await tf.fleet.jobs.publish('support', 'orders', { text: `Compile report R-${n}` }, { id: `J-R${n}` });
    await eventually(() => ((called().match(/^report /gm)?.length ?? 0) === 4 ? true : undefined), 30_000, 'the four reports');
    // Scripts run in worker threads, each with its own module: how many ran at once is read from when each ran.
    const spans = [...called().matchAll(/^report R-\d+ from (\d+) to (\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])] as const);
    const most = Math.max(...spans.map(([from]) => spans.filter(([f, t]) => f <= from && from < t).length));
    assert.equal(most, 2);
  });

  test('a job whose call fails is delivered again after the back-off, then given up as a dead letter with its reason and attempts', async () => {
    await tf.fleet.jobs.publish('support', 'orders', { text: 'Escalate ticket T-77 to a person' }, { id: 'J-2' });
    const letter = await eventually(async () => (await deadLetters()).find((l) => l.job.id === 'J-2'), 60_000, 'the dead letter');
    assert.equal(letter.attempts, 3);
    assert.equal(letter.reason.code, 'TOOL_FAILED');
    assert.match(letter.reason.message, /escalation desk is closed/);
    assert.equal(letter.agent, 'desk');
    assert.equal(called().match(/escalate T-77/g)?.length, 3, 'one call per delivery');
    await eventually(
      async () => {
        const b = await backlog();
        return b.waiting === 0 && b.in_progress === 0 ? true : undefined;
      },
      20_000,
      'the given-up job to leave the queue',
    );
  });

  test('words that resolve to no call, and a message that is not a job, are dead letters at once', async () => {
    await tf.fleet.jobs.publish('support', 'orders', { text: 'Sing me a song about the sea' }, { id: 'J-3' });
    // Published as a job is (with a deduplication id): what nats-server answers a pull aimed here has none, and is dropped.
    const id = headers();
    id.set('Nats-Msg-Id', 'not-a-job-1');
    nc.publish('thymos.jobs.support.orders', 'this is not a job', { headers: id });
    const letters = await eventually(
      async () => {
        const all = await deadLetters();
        return all.some((l) => l.job.id === 'J-3') && all.some((l) => l.reason.message.startsWith('not a job')) ? all : undefined;
      },
      30_000,
      'both dead letters',
    );
    const song = letters.find((l) => l.job.id === 'J-3')!;
    assert.equal(song.attempts, 1);
    assert.match(song.reason.message, /resolve to no call/);
    assert.equal(letters.find((l) => l.reason.message.startsWith('not a job'))!.reason.code, 'INVALID_INPUT');
  });

  test('the dead letters are listed, newest first, and one put back on its queue is worked again under its id', async () => {
    const letters = await tf.fleet.jobs.dead({ queue: 'support' });
    const j2 = letters.find((l) => (l.job as { id?: string }).id === 'J-2')!;
    assert.ok(j2 && letters.length >= 3, JSON.stringify(letters));
    assert.ok(
      letters.every((l, i) => i === 0 || l.seq < letters[i - 1]!.seq),
      'newest first',
    );
    const listed = await runThymos(['jobs', 'dead', 'support'], tf.ws.dir);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${j2.seq} +support +orders +J-2 +3 +TOOL_FAILED +escalate_ticket failed`, 'm'));
    const notAJob = letters.find((l) => l.reason.message.startsWith('not a job'))!;
    await assert.rejects(tf.fleet.jobs.requeue(notAJob.seq), (err: unknown) => isThymosError(err, 'INVALID_INPUT'));
    await assert.rejects(tf.fleet.jobs.requeue(999_999), (err: unknown) => isThymosError(err, 'NOT_FOUND'));
    rmSync(closedFlag);
    const back = await tf.fleet.jobs.requeue(j2.seq);
    assert.deepEqual([back.id, back.queue, back.skill], ['J-2', 'support', 'orders']);
    await eventually(() => (called().match(/escalate T-77/g)?.length === 4 ? true : undefined), 30_000, 'the requeued job worked');
    assert.ok(!(await tf.fleet.jobs.dead()).some((l) => l.seq === j2.seq), 'the letter is gone');
    await eventually(backlogEmpty, 20_000, 'the requeued job acknowledged');
  });

  test('a listening agent takes no jobs; active again, it takes what waited', async () => {
    await tf.fleet.start('desk', { mode: 'passive' });
    await tf.fleet.jobs.publish('support', 'orders', { text: 'Has order ORD-55555 shipped yet?' }, { id: 'J-5' });
    await eventually(
      async () => ((await backlog()).waiting + (await backlog()).in_progress === 1 ? true : undefined),
      20_000,
      'the job in the queue',
    );
    const activated = Date.now();
    await tf.fleet.start('desk', { mode: 'active' });
    const line = await eventually(() => /lookup ORD-55555 at (\d+)/.exec(called()) ?? undefined, 30_000, 'the waiting job to be worked');
    assert.ok(Number(line[1]) >= activated, 'worked only once the agent was active again');
    assert.equal(called().match(/lookup ORD-55555/g)?.length, 1);
  });
});
