import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Fleet } from '../client/fleet-client.js';
import { Helpdesk, type Ticket } from '../examples/support/helpdesk.js';
import { Pm2Names } from '../shared/config/fleet-paths.js';
import { ProcessManager } from '../supervisor/pm2/process-manager.js';
import { REPO_ROOT } from '../test/helpers/workspace.js';
import { withBenchFleet } from './bench-fleet.js';
import { AMENDS_THYMOS } from './domain-text.js';
import { cpuSeconds } from './proc-stats.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const SUPPORT = join(REPO_ROOT, 'examples', 'support');
const TICKETS = 1000;
/** Tickets published per second in the sustained run: the goal's rate. */
const RATE = 10;
const TRIAGE = 4;
const TEAMS = { billing: 7, shipping: 7, technical: 6 } as const;
const BURST = 20;
/** The gentler run before it: EASY tickets at EASY_RATE a second. */
const EASY = 200;
const EASY_RATE = 5;

/** The desk of examples/support with more hands: TRIAGE triage agents and 20 specialists, the same grants and behaviour. */
function deskPkl(): string {
  const grants = {
    triage: '"get_ticket"; "update_ticket"; "add_ticket_note"; "escalate_ticket"',
    billing:
      '"get_invoice"; "resend_invoice"; "refund_order_small"; "refund_order"; "reply_to_customer"; "add_ticket_note"; "escalate_ticket"',
    shipping:
      '"get_order"; "track_shipment"; "update_shipping_address"; "create_return"; "reply_to_customer"; "add_ticket_note"; "escalate_ticket"',
    technical:
      '"run_diagnostics"; "search_knowledge_base"; "report_outage_status"; "reset_password"; "unlock_account"; "reply_to_customer"; "add_ticket_note"; "escalate_ticket"',
    escalation: '"get_ticket"; "update_ticket"; "add_ticket_note"; "reply_to_customer"',
  };
  const knowledge = `knowledge {
      "billing team: charged twice, a double or duplicate charge, refund, money back, an invoice or receipt, send the invoice again, bill, payment, price, discount code"
      "shipping team: where is my parcel, package, delivery, track, tracking, late, lost, not arrived, address, return an item, damaged, broken, wrong item"
      "technical team: device, wifi, connection, firmware, app, website, sign in, log in, password, locked account, error, crash"
    }`;
  const agent = (id: string, skill: keyof typeof grants) =>
    `  ["${id}"] { persona { name = "${id}" }; skills { "${skill}" }; capabilities { ${grants[skill]} }${skill === 'triage' ? `\n    ${knowledge}` : ''} }`;
  const agents = [
    ...Array.from({ length: TRIAGE }, (_, i) => agent(`triage_${i + 1}`, 'triage')),
    ...Object.entries(TEAMS).flatMap(([team, n]) =>
      Array.from({ length: n }, (_, i) => agent(`${team}_${i + 1}`, team as keyof typeof grants)),
    ),
    agent('escalation_1', 'escalation'),
  ];
  return `${AMENDS_THYMOS}
import ${JSON.stringify(join(SUPPORT, 'tools.pkl'))} as catalogue
queues { ["support"] { maxDeliver = 3; backoffMs { 500; 2000 }; ackWaitMs = 30000; maxWorkMs = 60000 } }
workRelevance { fullBacklog = 4; urgentAfterMs = 10000; keepActiveMs = 3000; lullHalfLifeMs = 1500; everyMs = 500 }
agents {
${agents.join('\n')}
}
tools { for (name, tool in catalogue.tools) { [name] = tool } }
`;
}

/** A ticket every specialist settles with one call of its own: an invoice sent again, a return, a device checked. Each names its own order, so none answers another's key. */
function ticketText(i: number): string {
  const n = 10_000 + (i % 90_000);
  switch (i % 3) {
    case 0:
      return `Please send me the invoice INV-${String(300_000 + i)} again, I lost the email`;
    case 1:
      return `I want to return SKU-KB${String(100 + (i % 900))} from ORD-${n}, 1 of them, it arrived damaged`;
    default:
      return `My device SN-${String(i).padStart(8, 'X')} keeps dropping off the wifi, customer CUS-${20_000 + (i % 9000)}, please run the connectivity check`;
  }
}

async function until<T>(get: () => Promise<T | undefined> | T | undefined, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const WORKERS = () => [
  ...Array.from({ length: TRIAGE }, (_, i) => `triage_${i + 1}`),
  ...Object.entries(TEAMS).flatMap(([t, n]) => Array.from({ length: n }, (_, i) => `${t}_${i + 1}`)),
  'escalation_1',
];

async function allIn(fleet: Fleet, state: string, ids: readonly string[]): Promise<true | undefined> {
  const s = new Map((await fleet.status()).agents.map((a) => [a.id, a.state]));
  return ids.every((id) => s.get(id) === state) ? true : undefined;
}

async function wakeAll(fleet: Fleet): Promise<void> {
  const report = await fleet.reconcile({ agents: Object.fromEntries(WORKERS().map((id) => [id, { relevance: 1 }])) });
  if (report.failed.length > 0) throw new Error(`workers failed to wake: ${JSON.stringify(report.failed)}`);
  await until(() => allIn(fleet, 'active', WORKERS()), 180_000, 'every worker awake');
}

/** CPU seconds used so far, by part: the supervisor, nats-server, each kind of agent, and this process (the shop service and the client). */
async function cpuByPart(fleet: Fleet, data: string): Promise<Record<string, number>> {
  const status = await fleet.status();
  const pm = await ProcessManager.connect(join(data, 'pm2'));
  const nats = await pm.describe(Pm2Names.nats).finally(() => pm.disconnect());
  const out: Record<string, number> = {
    supervisor: cpuSeconds(status.supervisor.pid),
    'nats-server': nats?.pid ? cpuSeconds(nats.pid) : 0,
  };
  for (const a of status.agents) if (a.pid) out[a.id.replace(/_\d+$/, '')] = (out[a.id.replace(/_\d+$/, '')] ?? 0) + cpuSeconds(a.pid);
  const own = process.cpuUsage();
  out['shop service and client'] = (own.user + own.system) / 1e6;
  return out;
}

function spent(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
}

/** Looks every second at how many workers are Active until stopped; the median of those looks. */
function countAwake(fleet: Fleet): { stop(): Promise<number> } {
  const seen: number[] = [];
  let stopped = false;
  const looking = (async () => {
    while (!stopped) {
      seen.push((await fleet.status()).agents.filter((a) => a.state === 'active' && WORKERS().includes(a.id)).length);
      await sleep(1000);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await looking;
      return quantile(seen, 0.5);
    },
  };
}

/** Opens `n` tickets at `rate` a second and waits for them to settle: the solved ones, the seconds from the first opened to the last solved, and each one's wait. */
async function offer(
  desk: Helpdesk,
  n: number,
  rate: number,
  from: number,
): Promise<{ tickets: Ticket[]; solved: Ticket[]; seconds: number; lat: number[] }> {
  const tickets: Ticket[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / rate;
    if (due > performance.now()) await sleep(due - performance.now());
    tickets.push(await desk.open(`CUS-${20_000 + (i % 9000)}`, ticketText(from + i)));
  }
  await until(() => (tickets.every((t) => t.status !== 'open') ? true : undefined), 600_000, 'every ticket settled');
  const solved = tickets.filter((t) => t.solved_at !== undefined);
  const last = Math.max(...solved.map((t) => t.solved_at!));
  return { tickets, solved, seconds: (last - t0) / 1000, lat: solved.map((t) => t.solved_at! - t.opened_at) };
}

/** A burst after a lull: every worker asleep, BURST tickets at once; how long until the first is handed to a team and the first is solved. */
async function burstAfterLull(fleet: Fleet, desk: Helpdesk, from: number): Promise<{ routed: number; solved: number; all: number }> {
  await until(() => allIn(fleet, 'dormant', WORKERS()), 180_000, 'every worker asleep');
  const t0 = performance.now();
  const tickets: Ticket[] = [];
  for (let i = 0; i < BURST; i++) tickets.push(await desk.open(`CUS-${30_000 + i}`, ticketText(from + i)));
  await until(() => (tickets.every((t) => t.status !== 'open') ? true : undefined), 180_000, 'the burst settled');
  const firstOf = (k: 'routed_at' | 'solved_at') => Math.min(...tickets.flatMap((t) => (t[k] ? [t[k]] : []))) - t0;
  return {
    routed: firstOf('routed_at'),
    solved: firstOf('solved_at'),
    all: Math.max(...tickets.map((t) => t.solved_at ?? t.opened_at)) - t0,
  };
}

/**
 * A worker fleet at work: examples/support's desk with 4 triage agents and 20 specialists,
 * offline, its shop service on 127.0.0.1:8787. 1,000 tickets arrive at 10 a second once every
 * worker is awake; each goes through triage to a specialist, who makes one call and answers the
 * customer. Then a lull puts the fleet to sleep and a burst of 20 wakes it, with a warm pool of 4
 * and with none.
 */
export const supportScenario: Scenario = {
  name: 'support',
  title: 'A worker fleet: 1,000 tickets through 20 specialists, and a burst after a lull',
  async run() {
    const figures: Figure[] = [];
    const json: Record<string, unknown> = {};
    const toml = (pool: number) => [
      '[agent]',
      `behavior = ${JSON.stringify(join(SUPPORT, 'desk-behavior.mjs'))}`,
      'shutdown_timeout_ms = 5000',
      '[supervisor]',
      `pool_size = ${pool}`,
      '[lifecycle]',
      'min_dwell_ms = 30000',
      'max_active = 40',
      'max_running = 40',
      '[log]',
      'level = "warn"',
    ];
    let fleetRef: Fleet | undefined;
    const desk = new Helpdesk(async (skill, payload, id) => fleetRef!.jobs.publish('support', skill, payload, { id }));
    await desk.listen();
    try {
      const warm = await withBenchFleet('support-pool4', deskPkl(), toml(4), async (fleet, data) => {
        fleetRef = fleet;
        // Every worker woken at once (its first start seeds its knowledge); min_dwell_ms keeps it up until the tickets keep it busy.
        await wakeAll(fleet);
        // At half the rate first, which the fleet keeps up with: what a ticket waits when nothing queues.
        const easy = await offer(desk, EASY, EASY_RATE, TICKETS + 2 * BURST);
        const cpu0 = await cpuByPart(fleet, data);
        const awake = countAwake(fleet);
        const { tickets, solved, seconds, lat } = await offer(desk, TICKETS, RATE, 0);
        const active = await awake.stop();
        const cpu = spent(cpu0, await cpuByPart(fleet, data));
        const burst = await burstAfterLull(fleet, desk, TICKETS);
        return { tickets, solved, seconds, lat, cpu, burst, easy, active };
      });
      json.warm = {
        active: warm.active,
        solved: warm.solved.length,
        seconds: warm.seconds,
        p50: quantile(warm.lat, 0.5),
        p95: quantile(warm.lat, 0.95),
        cpu: warm.cpu,
        burst: warm.burst,
        easy: {
          solved: warm.easy.solved.length,
          seconds: warm.easy.seconds,
          p50: quantile(warm.easy.lat, 0.5),
          p95: quantile(warm.easy.lat, 0.95),
        },
      };
      figures.push(
        { metric: `tickets solved of ${TICKETS} (the rest escalated)`, value: warm.solved.length, unit: '' },
        {
          metric: `tickets per second sustained, ${RATE}/s offered`,
          value: round(warm.solved.length / warm.seconds, 1),
          unit: '/s',
          goal: '≥ 10 /s',
        },
        {
          metric: `publish → solved p50 / p95 at ${RATE}/s offered, the workers woken first`,
          value: `${Math.round(quantile(warm.lat, 0.5))} / ${Math.round(quantile(warm.lat, 0.95))}`,
          unit: 'ms',
          goal: 'p95 ≤ 2000 ms',
        },
        {
          metric: `workers Active during the ${RATE}/s run, median of one look a second (of ${WORKERS().length})`,
          value: warm.active,
          unit: '',
        },
        {
          metric: `publish → solved p50 / p95 at ${EASY_RATE}/s offered (${EASY} tickets, ${warm.easy.solved.length} solved at ${round(warm.easy.solved.length / warm.easy.seconds, 1)}/s)`,
          value: `${Math.round(quantile(warm.easy.lat, 0.5))} / ${Math.round(quantile(warm.easy.lat, 0.95))}`,
          unit: 'ms',
        },
        {
          metric: 'CPU per ticket, all of it (fleet, nats-server, the shop service and client)',
          value: round((Object.values(warm.cpu).reduce((a, b) => a + b, 0) * 1000) / TICKETS, 1),
          unit: 'ms',
        },
        ...Object.entries(warm.cpu).map(([part, sec]) => ({
          metric: `CPU per ticket: ${part}`,
          value: round((sec * 1000) / TICKETS, 1),
          unit: 'ms',
        })),
        {
          metric: `burst of ${BURST} after a lull, pool of 4: first ticket handed to a team / first solved / all solved`,
          value: `${Math.round(warm.burst.routed)} / ${Math.round(warm.burst.solved)} / ${Math.round(warm.burst.all)}`,
          unit: 'ms',
        },
      );
      const cold = await withBenchFleet('support-pool0', deskPkl(), toml(0), async (fleet) => {
        fleetRef = fleet;
        await wakeAll(fleet);
        return burstAfterLull(fleet, desk, TICKETS + BURST);
      });
      json.cold = cold;
      figures.push({
        metric: `burst of ${BURST} after a lull, no pool: first ticket handed to a team / first solved / all solved`,
        value: `${Math.round(cold.routed)} / ${Math.round(cold.solved)} / ${Math.round(cold.all)}`,
        unit: 'ms',
      });
    } finally {
      await desk.close();
    }
    return {
      figures,
      notes: [
        `The desk of examples/support (desk-behavior.mjs, offline: intent resolution and the shop API's tools) with ${TRIAGE} triage agents, ${Object.entries(
          TEAMS,
        )
          .map(([t, n]) => `${n} ${t}`)
          .join(', ')} specialists and an escalation agent; its shop service on 127.0.0.1:8787 in the bench's process.`,
        `Sustained: every worker awake first; ${EASY} tickets at ${EASY_RATE} a second, then ${TICKETS} tickets opened at ${RATE} a second (the CPU figures are of these) (an invoice sent again, a return, a device checked, in turn, each naming its own ids). Each ticket: triage recalls which team fits and hands it on (update_ticket); a specialist resolves the words to one call, makes it, and answers the customer (reply_to_customer). Solved = the customer's reply that closes it. Per second = solved tickets over the time from the first opened to the last solved.`,
        'Every worker is woken first and stays up at least 30 s (min_dwell_ms); from then on the work relevance keeps awake as many as the tickets need (one per job waiting or in hand, kept 3 s past the last: keepActiveMs). Burst after a lull: the work relevance puts every worker to sleep (Dormant), then 20 tickets are opened at once; first handed to a team = triage awake and done with one, first solved = a specialist awake and done with one.',
        'Every lever tried with its figure, and what the burst after a lull is made of: docs/worker-fleets.md.',
      ],
      json,
    };
  },
};
