import type { NatsConnection } from '@nats-io/transport-node';

import { AgentStatusMessageSchema, type FleetNames, parseJsonOrUndefined } from '../../shared/protocol/index.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';

/** What agents' heartbeats say: each running agent's RSS, and its model totals and tool calls for /metrics. */
export class AgentHeartbeats {
  readonly #rss = new Map<string, number>();

  /** Listens on every agent's status subject until the connection closes. */
  watch(nc: NatsConnection, names: FleetNames, metrics: SupervisorMetrics): void {
    const sub = nc.subscribe(names.allAgentStatus);
    void (async () => {
      for await (const m of sub) {
        // An agent's own status carries no reply and names the agent whose subject it came on
        // (only that agent may publish there); anything else is not its status.
        if (m.reply) continue;
        const parsed = AgentStatusMessageSchema.safeParse(parseJsonOrUndefined(m.string()));
        if (!parsed.success || m.subject !== names.agentStatus(parsed.data.state.id)) continue;
        const { state, rss_bytes, tool_calls } = parsed.data;
        if (rss_bytes !== undefined) this.#rss.set(state.id, rss_bytes);
        if (state.llm) metrics.observeLlm(state.id, state.llm);
        if (tool_calls) metrics.observeToolCalls(state.id, state.started_at, tool_calls);
      }
    })();
  }

  /** The last RSS an agent reported, in bytes. */
  rss(id: string): number | undefined {
    return this.#rss.get(id);
  }

  /** A stopped agent's last figures no longer hold. */
  forget(id: string): void {
    this.#rss.delete(id);
  }
}
