/**
 * The shop's support service the desk's tools call (tools.pkl): customers, orders, invoices,
 * tickets and refunds, in memory, on 127.0.0.1:8787. Every change honours `Idempotency-Key`:
 * a request repeated under a key is answered as the first was and changes nothing.
 *
 * It is also the ticket system: a new ticket goes to triage, a ticket handed to a team goes to
 * that team, an escalated one to the escalation desk — each as a job on the fleet's "support"
 * queue (`route`), under an id made of the ticket and where it goes, so a hand-over repeated is
 * one job.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export const HELPDESK_PORT = 8787;

export interface Ticket {
  ticket_id: string;
  customer_id: string;
  subject: string;
  text: string;
  status: 'open' | 'pending_customer' | 'on_hold' | 'solved' | 'closed';
  priority: 'low' | 'normal' | 'high' | 'urgent';
  team: string;
  /** The teams that have had it, in order (not triage): triage does not hand it to one again. */
  tried: string[];
  replies: string[];
  notes: string[];
  escalations: Array<{ tier: string; summary: string }>;
  /** When it was opened, handed to a team, and solved (performance.now(), ms). */
  opened_at: number;
  routed_at?: number;
  solved_at?: number;
}

export interface Refund {
  refund_id: string;
  order_id: string;
  amount: number;
  key: string;
}

type Reply = [status: number, body: unknown];

const ORDER = /^ORD-\d{5}$/;

export class Helpdesk {
  readonly tickets = new Map<string, Ticket>();
  readonly refunds: Refund[] = [];
  readonly returns: Array<{ return_id: string; order_id: string; sku: string }> = [];
  /** Changes asked again under a key already answered: answered the same, not made again. */
  repeats = 0;
  readonly #answered = new Map<string, Reply>();
  readonly #server: Server;
  #next = 10_000;

  /** `route(skill, payload, id)` puts a ticket's work on the queue. */
  constructor(private readonly route: (skill: string, payload: Record<string, unknown>, id: string) => Promise<unknown>) {
    this.#server = createServer((req, res) => void this.#serve(req, res));
  }

  async listen(port = HELPDESK_PORT): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'EADDRINUSE'
            ? new Error(
                `127.0.0.1:${port} is taken: the support service the desk's tools call (examples/support/tools.pkl) listens there; stop what holds it and run again`,
              )
            : err,
        ),
      );
      this.#server.listen(port, '127.0.0.1', resolve);
    });
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  /** A customer writes in: a new ticket, sent to triage. */
  async open(customer: string, text: string): Promise<Ticket> {
    const ticket: Ticket = {
      ticket_id: `TCK-${++this.#next}`,
      customer_id: customer,
      subject: text.slice(0, 60),
      text,
      status: 'open',
      priority: 'normal',
      team: 'triage',
      tried: [],
      replies: [],
      notes: [],
      escalations: [],
      opened_at: performance.now(),
    };
    this.tickets.set(ticket.ticket_id, ticket);
    await this.route('triage', { ticket_id: ticket.ticket_id, customer_id: customer, text }, `${ticket.ticket_id}-triage`);
    return ticket;
  }

  /** A person on the desk escalates a ticket, as the escalate_ticket tool does. */
  async escalate(ticketId: string, tier: string, summary: string): Promise<void> {
    const t = this.tickets.get(ticketId);
    if (!t) return;
    t.escalations.push({ tier, summary });
    t.status = 'on_hold';
    await this.route(
      'escalation',
      { ticket_id: t.ticket_id, customer_id: t.customer_id, tier, text: summary },
      `${t.ticket_id}-escalation-${tier}`,
    );
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const key = req.headers['idempotency-key'];
    const write = ([status, body]: Reply): void =>
      void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method !== 'GET' && typeof key === 'string' && this.#answered.has(key)) {
      this.repeats++;
      return write(this.#answered.get(key)!);
    }
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      return write([400, { error: 'the body is not JSON' }]);
    }
    const reply = await this.#answer(req.method ?? 'GET', url, body, typeof key === 'string' ? key : '').catch(
      (err: unknown) => [500, { error: String(err) }] as Reply,
    );
    if (req.method !== 'GET' && typeof key === 'string' && reply[0] < 500) this.#answered.set(key, reply);
    write(reply);
  }

  async #answer(method: string, url: URL, body: Record<string, unknown>, key: string): Promise<Reply> {
    const parts = url.pathname.split('/').filter(Boolean);
    const [what, id, sub] = parts;
    if (what === 'orders' && id && ORDER.test(id)) return this.#order(method, id, sub, body, key);
    if (what === 'invoices') return this.#invoice(method, id, sub, url);
    if (what === 'tickets' && id) return this.#ticket(method, id, sub, body);
    if (what === 'customers' && id && sub === 'diagnostics') {
      const serial = url.searchParams.get('serial_number') ?? '';
      return [
        200,
        {
          overall: serial ? 'warning' : 'pass',
          findings: [
            serial
              ? `connectivity: ${serial} drops off the wifi every few hours; firmware 2.1.0, update 2.3.1 available`
              : 'account_sync: ok',
            'sign_in: ok',
          ],
        },
      ];
    }
    if (what === 'customers' && id && (sub === 'password-reset' || sub === 'unlock')) return [200, { customer_id: id, done: sub }];
    if (what === 'kb') return [200, { articles: [{ title: 'If your device drops off the wifi', url: 'https://help.example/wifi' }] }];
    if (what === 'status') return [200, { status: 'operational', incidents: [] }];
    return [404, { error: `no such resource: ${method} ${url.pathname}` }];
  }

  #order(method: string, id: string, sub: string | undefined, body: Record<string, unknown>, key: string): Reply {
    const n = Number(id.slice(4));
    const total = 20 + (n % 7) * 15.5;
    if (method === 'GET' && !sub)
      return [
        200,
        {
          order_id: id,
          customer_id: `CUS-${20_000 + (n % 50)}`,
          status: 'delivered',
          total,
          currency: 'EUR',
          placed_at: '2026-11-02T10:00:00Z',
        },
      ];
    if (method === 'GET' && sub === 'shipment')
      return [
        200,
        {
          carrier: 'dhl',
          tracking_number: `JD0146${n}`,
          status: n % 2 ? 'in_transit' : 'delivered',
          estimated_delivery: '2026-11-28',
          last_event: 'Arrived at sorting centre, Leeds',
        },
      ];
    if (method === 'POST' && sub === 'refunds') {
      const amount = Number(body.amount);
      if (!(amount > 0) || amount > total * 2) return [422, { error: `a refund of ${String(body.amount)} is more than ${id} cost` }];
      const refund: Refund = { refund_id: `RFD-${String(100_000 + this.refunds.length + 1)}`, order_id: id, amount, key };
      this.refunds.push(refund);
      return [201, { refund_id: refund.refund_id, amount, status: 'processed' }];
    }
    if (method === 'POST' && sub === 'returns') {
      const r = { return_id: `RMA-${String(10_000 + this.returns.length + 1)}`, order_id: id, sku: String(body.sku) };
      this.returns.push(r);
      return [201, { return_id: r.return_id, label_url: `https://help.example/labels/${r.return_id}`, return_by: '2026-12-10' }];
    }
    if (method === 'PUT' && sub === 'shipping-address') return [200, { order_id: id, updated: true }];
    return [404, { error: `no such resource on ${id}` }];
  }

  #invoice(method: string, id: string | undefined, sub: string | undefined, url: URL): Reply {
    if (method === 'POST' && id && sub === 'send') return [202, { invoice_id: id, sent: true }];
    const order = url.searchParams.get('order_id') || 'ORD-10001';
    const invoice = url.searchParams.get('invoice_id') || `INV-3${order.slice(5)}0`;
    return [200, { invoice_id: invoice, order_id: order, total: 49.5, tax: 8.25, status: 'paid' }];
  }

  async #ticket(method: string, id: string, sub: string | undefined, body: Record<string, unknown>): Promise<Reply> {
    const t = this.tickets.get(id);
    if (!t) return [404, { error: `no ticket ${id}` }];
    if (method === 'GET' && !sub)
      return [200, { ticket_id: t.ticket_id, status: t.status, priority: t.priority, customer_id: t.customer_id, subject: t.subject }];
    if (method === 'PATCH' && !sub) {
      for (const f of ['status', 'priority'] as const)
        if (typeof body[f] === 'string') (t as unknown as Record<string, unknown>)[f] = body[f];
      if (typeof body.team === 'string' && body.team !== t.team) {
        if (t.team !== 'triage') t.tried.push(t.team);
        t.team = body.team;
        t.routed_at ??= performance.now();
        // Handed back to triage, it comes with the teams that had it, and as a new job (its id counts the hand-offs).
        await this.route(
          t.team,
          { ticket_id: t.ticket_id, customer_id: t.customer_id, text: t.text, tried: t.tried },
          `${t.ticket_id}-${t.team}-${t.tried.length}`,
        );
      }
      return [200, { ticket_id: t.ticket_id, status: t.status, team: t.team }];
    }
    if (method === 'POST' && sub === 'notes') {
      t.notes.push(String(body.note));
      return [201, { ticket_id: id, notes: t.notes.length }];
    }
    if (method === 'POST' && sub === 'replies') {
      t.replies.push(String(body.message));
      if (typeof body.status_after === 'string') t.status = body.status_after as Ticket['status'];
      if (t.status === 'solved') t.solved_at ??= performance.now();
      return [201, { ticket_id: id, status: t.status }];
    }
    if (method === 'POST' && sub === 'escalations') {
      await this.escalate(id, String(body.tier), String(body.summary));
      return [201, { ticket_id: id, status: t.status }];
    }
    return [404, { error: `no such resource on ${id}` }];
  }
}
