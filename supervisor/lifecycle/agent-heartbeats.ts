import type { NatsConnection } from '@nats-io/transport-node';

import { type DomainSchema, grantedTools } from '../../shared/domain/index.js';
import { AgentStatusMessageSchema, type FleetNames, parseJsonOrUndefined } from '../../shared/protocol/index.js';
import type { SupervisorMetrics } from '../metrics/supervisor-metrics.js';

/** The names of the tools the domain grants an agent (none for an agent it does not define). */
export type GrantedTools = (agent: string) => ReadonlySet<string>;

/** What `domain` grants each agent, worked out once per agent. */
export function grantedToolNames(domain: DomainSchema): GrantedTools {
  const known = new Map<string, ReadonlySet<string>>();
  const none: ReadonlySet<string> = new Set();
  return (agent) => {
    const def = Object.hasOwn(domain.agents, agent) ? domain.agents[agent] : undefined;
    if (!def) return none;
    let names = known.get(agent);
    if (!names) known.set(agent, (names = new Set(Object.keys(grantedTools(domain.tools, def.capabilities)))));
    return names;
  };
}

/**
 * What agents' heartbeats say: each running agent's RSS, and its model totals and tool calls for
 * /metrics. Only the calls of tools the domain grants the agent are counted: a series is kept per
 * agent and tool for the supervisor's life, so names an agent makes up would grow it without end.
 */
export class AgentHeartbeats {
  readonly #rss = new Map<string, number>();
  readonly #granted: GrantedTools;

  constructor(granted: GrantedTools) {
    this.#granted = granted;
  }

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
        if (tool_calls) {
          const granted = this.#granted(state.id);
          metrics.observeToolCalls(
            state.id,
            state.started_at,
            tool_calls.filter((c) => granted.has(c.tool)),
          );
        }
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
