import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { LifecycleState } from '../shared/domain-schema.js';

/** The supervisor's Prometheus metrics, in a registry of its own (no global state). */
export class SupervisorMetrics {
  readonly registry = new Registry();
  readonly agents = new Gauge({ name: 'thymos_agents', help: 'Agents by lifecycle state', labelNames: ['state'] as const, registers: [this.registry] });
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
  readonly transitions = new Counter({ name: 'thymos_transitions_total', help: 'Transitions done', labelNames: ['kind'] as const, registers: [this.registry] });
  readonly failures = new Counter({ name: 'thymos_transition_failures_total', help: 'Transitions that failed', labelNames: ['kind', 'code'] as const, registers: [this.registry] });
  #server: Server | undefined;

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
