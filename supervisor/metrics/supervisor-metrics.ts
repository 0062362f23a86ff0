import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { Counter, Gauge, Histogram, Registry } from 'prom-client';

import type { LifecycleState } from '../../shared/domain/index.js';

interface LlmTotals {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
}

/** The supervisor's Prometheus metrics, in a registry of its own (no global state). */
export class SupervisorMetrics {
  readonly registry = new Registry();

  /** `host`, when given, labels every series (`host="<name>"`), so several hosts' metrics can be told apart. */
  constructor(host?: string) {
    if (host !== undefined) this.registry.setDefaultLabels({ host });
  }

  readonly agents = new Gauge({
    name: 'thymos_agents',
    help: 'Agents by lifecycle state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly reconcileSeconds = new Histogram({
    name: 'thymos_reconcile_duration_seconds',
    help: 'Wall time of a reconcile, decisions and process actions included',
    buckets: [0.005, 0.02, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly decisionSeconds = new Histogram({
    name: 'thymos_reconcile_decision_seconds',
    help: 'Time to score agents and decide their states, without process actions',
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5],
    registers: [this.registry],
  });
  readonly startupSeconds = new Histogram({
    name: 'thymos_agent_startup_duration_seconds',
    help: 'From pm2 start to the agent answering MCP with its NATS heartbeat seen',
    buckets: [0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });
  readonly leaseRenewSeconds = new Histogram({
    name: 'thymos_lease_renew_seconds',
    help: "Placement by lease: time for a renewal of this host's lease to be stored",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
    registers: [this.registry],
  });
  readonly leaseLosses = new Counter({
    name: 'thymos_lease_losses_total',
    help: "Placement by lease: times this host's lease was found lost",
    registers: [this.registry],
  });
  readonly transitions = new Counter({
    name: 'thymos_transitions_total',
    help: 'Transitions done',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly failures = new Counter({
    name: 'thymos_transition_failures_total',
    help: 'Transitions that failed',
    labelNames: ['kind', 'code'] as const,
    registers: [this.registry],
  });
  readonly llmCalls = new Counter({
    name: 'thymos_llm_calls_total',
    help: 'Model calls of agents (offline answers not counted)',
    labelNames: ['agent'] as const,
    registers: [this.registry],
  });
  readonly llmTokens = new Counter({
    name: 'thymos_llm_tokens_total',
    help: 'Model tokens of agents, by direction',
    labelNames: ['agent', 'direction'] as const,
    registers: [this.registry],
  });
  readonly llmCost = new Counter({
    name: 'thymos_llm_cost_total',
    help: 'What model calls cost, by the [llm.<use>] prices',
    labelNames: ['agent'] as const,
    registers: [this.registry],
  });
  readonly routed = new Counter({
    name: 'thymos_events_routed_total',
    help: 'World events routed to each agent that hears them (stored for it, heard now or on waking)',
    labelNames: ['agent'] as const,
    registers: [this.registry],
  });
  readonly toolCalls = new Counter({
    name: 'thymos_tool_calls_total',
    help: 'Calls of declared tools, by agent, tool and how they ended (pending: waiting for approval)',
    labelNames: ['agent', 'tool', 'status'] as const,
    registers: [this.registry],
  });
  readonly #routedTo = new Map<string, number>();
  /** Per agent: the process it last reported from (its started_at) and the counts it reported. */
  readonly #toolsSeen = new Map<string, { process: string; counts: Map<string, number> }>();
  /** The last totals each agent reported; the counters grow by the difference. */
  readonly #llmSeen = new Map<string, LlmTotals>();
  #server: Server | undefined;

  /**
   * Takes an agent's model totals from its heartbeat. Agents keep them across restarts; a
   * total lower than the last one seen (its data was reset) counts from zero again.
   */
  observeLlm(agent: string, totals: LlmTotals): void {
    const last = this.#llmSeen.get(agent) ?? { calls: 0, input_tokens: 0, output_tokens: 0, cost: 0 };
    const reset = totals.calls < last.calls;
    const from = reset ? { calls: 0, input_tokens: 0, output_tokens: 0, cost: 0 } : last;
    const grow = (counter: Counter<string>, labels: Record<string, string>, by: number) => {
      if (by > 0) counter.inc(labels, by);
    };
    grow(this.llmCalls, { agent }, totals.calls - from.calls);
    grow(this.llmTokens, { agent, direction: 'input' }, totals.input_tokens - from.input_tokens);
    grow(this.llmTokens, { agent, direction: 'output' }, totals.output_tokens - from.output_tokens);
    grow(this.llmCost, { agent }, totals.cost - from.cost);
    this.#llmSeen.set(agent, { ...totals });
  }

  /**
   * Takes an agent's tool call counts from its heartbeat. They count from its process start:
   * a new process (another `startedAt`) counts from zero again.
   */
  observeToolCalls(agent: string, startedAt: string, calls: ReadonlyArray<{ tool: string; status: string; count: number }>): void {
    let seen = this.#toolsSeen.get(agent);
    if (seen?.process !== startedAt) this.#toolsSeen.set(agent, (seen = { process: startedAt, counts: new Map() }));
    for (const { tool, status, count } of calls) {
      const key = `${tool} ${status}`;
      const by = count - (seen.counts.get(key) ?? 0);
      if (by > 0) this.toolCalls.inc({ agent, tool, status }, by);
      seen.counts.set(key, count);
    }
  }

  /** Counts one event routed to each of `agents`. */
  countRouted(agents: readonly string[]): void {
    for (const agent of agents) {
      this.routed.inc({ agent });
      this.#routedTo.set(agent, (this.#routedTo.get(agent) ?? 0) + 1);
    }
  }

  /** Events routed to `agent` since this supervisor started. */
  routedTo(agent: string): number {
    return this.#routedTo.get(agent) ?? 0;
  }

  setCounts(counts: Record<LifecycleState, number>): void {
    for (const [state, n] of Object.entries(counts)) this.agents.set({ state }, n);
  }

  /** Serves `GET /metrics` on host:port (0 picks a port); resolves the URL. */
  async listen(host: string, port: number): Promise<string> {
    const server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`),
      );
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    return `http://${host}:${address.port}/metrics`;
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
