/**
 * Every NATS subject Thymos uses, in one place. Agent ids are validated
 * (`AgentIdSchema`) before they reach these functions, so they never carry
 * `.`, `*` or `>`.
 */
export const Subjects = {
  /** Request/reply control of one agent: get_state, set_mode, snapshot, shutdown. */
  agentControl: (id: string) => `thymos.agent.${id}.control`,
  /** Heartbeats and lifecycle notices of one agent. */
  agentStatus: (id: string) => `thymos.agent.${id}.status`,
  /** Every agent's status, for the supervisor. */
  allAgentStatus: 'thymos.agent.*.status',
  /** Agent-to-agent messages. */
  agentInbox: (id: string) => `thymos.agent.${id}.inbox`,
  /** What one agent decided about a world event it heard (`[agent] reason_on_events`). */
  agentDecision: (id: string) => `thymos.agent.${id}.decision`,
  /** Every agent's decisions. */
  allAgentDecisions: 'thymos.agent.*.decision',
  /** World events: `thymos.events.<kind>[.<more>]`. */
  events: (kind: string) => `thymos.events.${kind}`,
  /** The supervisor's control API. */
  supervisor: (op: string) => `thymos.supervisor.${op}`,
  /** The world store's API (get, set, query, subscribe…), answered by the supervisor. */
  world: (op: string) => `thymos.world.${op}`,
  /** The fleet's embedding service: texts in, vectors out. */
  embed: 'thymos.embed',
  /** Which model the embedding service runs. */
  embedInfo: 'thymos.embed.info',
  /** Notifications of one live query. */
  worldLive: (sub: string) => `thymos.world.live.${sub}`,
} as const;
