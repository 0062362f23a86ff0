/**
 * A day at a support desk run by agents. Customers write in; the shop's support service (a local
 * HTTP service, helpdesk.ts) turns each message into a ticket and puts it on the fleet's
 * "support" queue for triage; triage hands it to a team; a specialist acts through the service's
 * API (tools.pkl) and answers the customer, or escalates. Refunds that need a person's approval
 * are decided by this loop, as the desk's supervisor. Nobody feeds the fleet a context: the
 * workers wake for a burst and sleep through the lull by the work waiting (desk.pkl).
 *
 * The loop checks its own outcomes and exits non-zero when one fails.
 *
 *   npm run example:support               (builds, then runs this file)
 *   node --import tsx examples/support/day.ts [path/to/thymos.toml]
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { type Approver, approver, connect, downFleet, exitWithError, type Fleet, loadConfig, upFleet } from '../../index.js';
import { Helpdesk, type Ticket } from './helpdesk.js';

const configFile = process.argv[2] ?? fileURLToPath(new URL('thymos.toml', import.meta.url));
const WORKERS = ['triage', 'billing', 'shipping', 'technical', 'escalation'];
const SPECIALISTS = ['billing', 'shipping', 'technical'];
/** Refunds the desk's supervisor approves without a manager, in the order's currency. */
const REFUND_LIMIT = 100;
const failures: string[] = [];

function check(what: string, ok: boolean, detail = ''): void {
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}${detail && !ok ? ` — ${detail}` : ''}`);
  if (!ok) failures.push(what);
}

/** Polls `get` until it answers, or `ms` pass (undefined then). */
async function until<T>(get: () => Promise<T | undefined> | T | undefined, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (v !== undefined || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const morning: Array<[customer: string, text: string]> = [
  ['CUS-20001', 'I was charged twice for order ORD-10001, please refund the duplicate charge of 24.50'],
  ['CUS-20002', 'Please send me the invoice INV-300004 again, I lost the email'],
  ['CUS-20003', 'I want to return SKU-KB104 from ORD-10005, 1 of them, it arrived damaged'],
  ['CUS-20004', 'My device SN-8F3KQ2ZL keeps dropping off the wifi, customer CUS-20004, please run the connectivity check'],
  ['CUS-20005', 'The parcel for ORD-10006 never arrived and I want my money back: 320.00, it was not received'],
  ['CUS-20008', 'I was charged twice for order ORD-10008, please refund the duplicate charge of 180.00'],
  ['CUS-20006', 'Hello? Is anybody there?'],
  ['CUS-20007', 'refund 30.00 on ORD-10007, the item was damaged'],
];
const afternoon: Array<[customer: string, text: string]> = [
  // The first customer writes again about the same order: one refund, not two.
  ['CUS-20001', 'Me again about ORD-10001: I was charged twice, please refund the duplicate charge of 24.50'],
  ['CUS-20009', 'I was charged twice for order ORD-10009, please refund the duplicate charge of 35.00'],
  ['CUS-20010', 'My device SN-7Q2WX9PL will not connect to the wifi, customer CUS-20010, please run the connectivity check'],
  ['CUS-20011', 'I want to return SKU-MUG22 from ORD-10011, 2 of them, it is the wrong item'],
];

/** Whether a ticket is through: solved, or escalated to a person (waiting for an approval is not through). */
const through = (t: Ticket) => t.status === 'solved' || t.escalations.length > 0;

/** How a ticket ended: solved, escalated, or still open or waiting. */
function outcome(t: Ticket): string {
  if (t.escalations.length > 0) return `escalated to ${t.escalations.map((e) => `${e.tier}: ${e.summary.slice(0, 90)}`).join('; ')}`;
  return t.status;
}

/**
 * The desk's supervisor: approves refunds within the limit, refuses the rest and hands those
 * tickets to the escalation desk. It decides as the fleet's approver, a key of its own: the
 * loop's client connection, which publishes the jobs, could not approve a refund.
 */
function supervise(manager: Approver, desk: Helpdesk, decided: Map<string, 'approved' | 'refused'>): () => Promise<void> {
  let round: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (round) return;
    round = (async () => {
      for (const call of await manager.approvals()) {
        if (decided.has(call.call_id)) continue;
        const amount = Number(call.arguments.amount);
        const ticket = /TCK-\d{5}/.exec(call.reason ?? '')?.[0];
        if (amount <= REFUND_LIMIT) {
          await manager.approve(call.agent, call.call_id, { reason: `within the desk's refund limit of ${REFUND_LIMIT}` });
          decided.set(call.call_id, 'approved');
        } else {
          await manager.refuse(call.agent, call.call_id, { reason: `above ${REFUND_LIMIT}: a manager decides` });
          decided.set(call.call_id, 'refused');
          if (ticket)
            await desk.escalate(
              ticket,
              'supervisor',
              `A refund of ${amount} on ${String(call.arguments.order_id)} is above the desk's limit; a manager decides.`,
            );
        }
        console.log(
          `  supervisor ${decided.get(call.call_id)} ${call.tool} ${String(call.arguments.order_id)} ${amount} for ${call.agent}`,
        );
      }
    })()
      .catch((err: unknown) => console.log(`  supervisor: ${String(err)}`))
      .finally(() => (round = undefined));
  }, 300);
  return async () => {
    clearInterval(timer);
    await round;
  };
}

async function states(fleet: Fleet): Promise<Map<string, string>> {
  return new Map((await fleet.status()).agents.map((a) => [a.id, a.state]));
}

/** Until every ticket has settled and the queue and the approvals are empty. */
async function settled(fleet: Fleet, desk: Helpdesk, tickets: Ticket[]): Promise<boolean> {
  const done = await until(async () => {
    const backlog = await fleet.jobs.list('support');
    const busy = backlog.some((b) => b.waiting + b.in_progress > 0) || (await fleet.approvals()).length > 0;
    return !busy && tickets.every(through) ? true : undefined;
  }, 120_000);
  for (const t of tickets)
    console.log(
      `  ${t.ticket_id} ${t.customer_id}: ${outcome(t)} — "${t.text.slice(0, 60)}"${t.replies.length ? `\n      reply: ${t.replies.at(-1)!.slice(0, 110)}` : ''}`,
    );
  return done === true;
}

async function burst(desk: Helpdesk, messages: Array<[string, string]>): Promise<Ticket[]> {
  const out: Ticket[] = [];
  for (const [customer, text] of messages) out.push(await desk.open(customer, text));
  return out;
}

/** The day; the exit status says whether every check held. */
async function main(): Promise<number> {
  const config = loadConfig(configFile);
  // Each run is a new day at a new desk: the keys of yesterday's refunds would answer today's.
  if (config.dataPath !== join(dirname(resolve(configFile)), 'data'))
    throw new Error(
      `the support desk starts each day with an empty data directory, so it runs only with data_dir = "data" beside its thymos.toml (${configFile} has ${config.dataPath})`,
    );
  if ((await downFleet(config)).wasRunning) console.log("Stopped yesterday's desk");
  rmSync(config.dataPath, { recursive: true, force: true });
  let fleet: Fleet | undefined;
  const desk = new Helpdesk(async (skill, payload, id) => fleet!.jobs.publish('support', skill, payload, { id }));
  await desk.listen();
  console.log(`Starting the support desk (${configFile})`);
  const up = await upFleet(config, { onStep: (line) => console.log(`  ${line}`) });
  fleet = await connect(config);
  const manager = await approver(config);
  const decided = new Map<string, 'approved' | 'refused'>();
  const stopSupervising = supervise(manager, desk, decided);
  try {
    console.log('\nmorning: a burst of tickets');
    const first = await burst(desk, morning);
    // Two messages that are not tickets reach the queue straight, as a broken integration would send them.
    await fleet.jobs.publish('support', 'triage', 'not a ticket at all', { id: 'junk-1' });
    await fleet.jobs.publish('support', 'billing', { ticket_id: 'TCK-1', text: '' }, { id: 'junk-2' });
    const woke = await until(async () => ((await states(fleet!)).get('triage') === 'active' ? true : undefined), 60_000);
    check('the burst woke triage, with no context sent by anyone', woke === true);
    check('every morning ticket settled: solved, or escalated to a person', await settled(fleet, desk, first));

    console.log('\nthe lull');
    const slept = await until(async () => {
      const s = await states(fleet!);
      return WORKERS.every((id) => s.get(id) === 'dormant') ? s : undefined;
    }, 90_000);
    check('in the lull every worker went to sleep (Dormant)', slept !== undefined, JSON.stringify([...(await states(fleet)).entries()]));

    console.log('\nafternoon: a second burst');
    const lullEnded = new Date().toISOString();
    const second = await burst(desk, afternoon);
    check('every afternoon ticket settled', await settled(fleet, desk, second));
    const woken = await Promise.all(
      SPECIALISTS.map(async (id) => (await fleet!.history(id)).some((t) => t.to === 'active' && t.ok && t.at >= lullEnded)),
    );
    check('the second burst woke the billing, shipping and technical specialists', woken.every(Boolean), JSON.stringify(woken));

    console.log('\nchecks');
    const all = [...first, ...second];
    const dead = await fleet.jobs.dead({ queue: 'support' });
    for (const l of dead)
      console.log(`  dead letter: ${String((l.job as { id?: string }).id ?? l.job)} (${l.reason.code}) ${l.reason.message.slice(0, 80)}`);
    check(
      'every ticket was solved or escalated: none left waiting, its customer not told',
      all.every(through),
      all.map((t) => `${t.ticket_id} ${outcome(t)}`).join('; '),
    );
    const of = (customer: string, tickets = all) => tickets.find((t) => t.customer_id === customer)!;
    const approvedRefund = of('CUS-20009');
    check(
      'a refund a person approved was made, and its customer told so: the ticket is solved',
      approvedRefund.status === 'solved' &&
        desk.refunds.some((r) => r.order_id === 'ORD-10009' && r.amount === 35) &&
        /^Done: refund/.test(approvedRefund.replies.at(-1) ?? ''),
      `${outcome(approvedRefund)}; replies: ${JSON.stringify(approvedRefund.replies)}`,
    );
    const plainRefund = of('CUS-20007');
    check(
      'a plain refund request was refunded by billing, not escalated',
      plainRefund.status === 'solved' && desk.refunds.some((r) => r.order_id === 'ORD-10007' && r.amount === 30),
      `${outcome(plainRefund)}; tried: ${plainRefund.tried.join(', ')}`,
    );
    const escalated = all
      .filter((t) => t.escalations.length > 0)
      .map((t) => t.customer_id)
      .sort();
    check(
      'only what needs a person was escalated: the two refunds above the limit and a message no team can read',
      JSON.stringify(escalated) === JSON.stringify(['CUS-20005', 'CUS-20006', 'CUS-20008']),
      escalated.join(', '),
    );
    check(
      'every escalated ticket was taken over by the escalation desk',
      all.filter((t) => t.escalations.length > 0).every((t) => t.notes.some((n) => n.startsWith('Taken over by'))),
    );
    check(
      'the malformed jobs are dead letters, each with its reason',
      ['junk-1', 'junk-2'].every((id) => dead.some((l) => (l.job as { id?: string }).id === id && l.reason.message.length > 0)),
      JSON.stringify(dead.map((l) => l.reason)),
    );
    const byOrder = new Map<string, number>();
    for (const r of desk.refunds) byOrder.set(`${r.order_id} ${r.amount}`, (byOrder.get(`${r.order_id} ${r.amount}`) ?? 0) + 1);
    console.log(
      `  refunds made: ${[...byOrder.entries()].map(([k, n]) => `${k} ×${n}`).join(', ')}; changes asked again and answered, not redone: ${desk.repeats}`,
    );
    check(
      'no refund was made twice, though ORD-10001 was asked for twice',
      [...byOrder.values()].every((n) => n === 1) && byOrder.get('ORD-10001 24.5') === 1,
      JSON.stringify([...byOrder]),
    );
    check(
      'the refund above the limit was refused and never made',
      [...decided.values()].includes('refused') && !desk.refunds.some((r) => r.amount > REFUND_LIMIT),
    );
    const history = await Promise.all(SPECIALISTS.map(async (id) => [id, (await fleet!.history(id)).map((t) => t.to)] as const));
    check(
      'specialists slept through the lull and woke for the second burst',
      history.every(([, to]) => to.some((state, i) => state === 'dormant' && to.slice(0, i).includes('active'))),
      JSON.stringify(history),
    );
    const recalls: Array<[string, string]> = [
      ['billing', 'ORD-10001'],
      ['shipping', 'ORD-10005'],
      ['technical', 'SN-8F3KQ2ZL'],
    ];
    for (const [id, what] of recalls) {
      // Asleep since the lull: woken to be asked (it stays up min_dwell_ms, then the work puts it back to sleep).
      await fleet.start(id);
      const agent = await fleet.agent(id);
      const found = (await agent.callTool({ name: 'recall', arguments: { query: what, tags: ['job'], k: 3 } })).structuredContent as
        { results: Array<{ content: string }> } | undefined;
      check(
        `${id} recalls the ticket it worked by ${what}`,
        found?.results.some((r) => r.content.includes(what)) === true,
        JSON.stringify(found?.results.map((r) => r.content.slice(0, 120))),
      );
    }
    const audit = readAudit(join(config.dataPath, 'logs', 'audit.jsonl'));
    check(
      'the approvals this loop decided are in the audit log, as the approver’s',
      [...decided.keys()].every((id) => audit.some((line) => line.includes(id) && line.includes('"by":"approver"'))),
      `${decided.size} decided`,
    );
    // A stock MCP client on a specialist's port: its declared tools are listed, and a change without a reason is refused.
    await fleet.start('billing');
    const billing = await fleet.agent('billing');
    const tools = (await billing.listTools()).tools.map((t) => t.name);
    check(
      "billing's MCP endpoint lists its declared tools",
      ['refund_order_small', 'reply_to_customer', 'escalate_ticket'].every((t) => tools.includes(t)),
      tools.join(', '),
    );
    const refused = await billing.callTool({
      name: 'refund_order_small',
      arguments: { order_id: 'ORD-10001', amount: 5, reason_code: 'goodwill' },
    });
    check(
      'a call of a tool with side effects, without a reason, is refused',
      refused.isError === true && /reason/.test(JSON.stringify(refused.content)),
      JSON.stringify(refused.content).slice(0, 200),
    );
  } finally {
    await stopSupervising();
    await manager.close();
    await fleet.close();
    if (!up.alreadyRunning) {
      console.log('\nStopping the desk');
      await downFleet(config);
    }
    await desk.close();
  }

  if (failures.length) {
    console.error(`\n${failures.length} check(s) failed:\n  ${failures.join('\n  ')}`);
    return 1;
  }
  console.log('\nall checks passed');
  return 0;
}

function readAudit(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

// A ThymosError (nats-server missing, a bad config) ends the run as the thymos command does.
main().then((code) => process.exit(code), exitWithError);
