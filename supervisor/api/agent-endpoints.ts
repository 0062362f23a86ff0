import { agentMcpUrl, natsLinkPrivate, type ThymosConfig } from '../../shared/config/index.js';
import { type DomainSchema, grantedTools } from '../../shared/domain/index.js';
import { ErrorCode, knownCode, ThymosError } from '../../shared/errors/index.js';
import { readAgentToken } from '../../shared/platform/index.js';
import type { AgentAccess, AgentEndpoint, ReconcileReport } from '../../shared/protocol/index.js';

export interface AgentEndpointsOptions {
  domain: DomainSchema;
  config: ThymosConfig;
  /** The NATS server this supervisor is connected to: a token crosses it only when it is loopback or TLS. */
  natsUrl: string;
  /** The pid pm2 runs an agent as now (a restart by pm2 gives it a new one the registry has not seen), or null. */
  livePid?: ((id: string) => Promise<number | null>) | undefined;
  /** Where an agent stands now. */
  entry(id: string): { state: string; port: number | null; pid: number | null } | undefined;
  /** Whether an agent still runs only because a reconcile that answered before its stops is putting it to sleep. */
  stopping(id: string): boolean;
  /** Makes an agent Active, as `thymos start` does (no pin: the next reconcile decides again). */
  wake(id: string, onProgress: (p: unknown) => void): Promise<ReconcileReport>;
}

/**
 * Answers `agent_endpoint`: where agent `from` reaches agent `id` for its Mcp tool `tool`.
 * Only for a declared Mcp tool that targets `id` and that `from`'s capabilities grant, so the
 * address and token go to no agent the domain does not mean to call `id`. A Dormant agent is
 * AGENT_NOT_ACTIVE, or with `wake` is made Active first (a Listening one too); an Archived one
 * is AGENT_NOT_ACTIVE either way. An agent a reconcile is putting to sleep counts as Dormant: its
 * address would not answer for long, and a wake waits for its stop, then starts it again.
 */
export class AgentEndpoints {
  readonly #o: AgentEndpointsOptions;

  constructor(options: AgentEndpointsOptions) {
    this.#o = options;
  }

  async resolve(r: { id: string; from: string; tool: string; wake: boolean }, onProgress: (p: unknown) => void): Promise<AgentEndpoint> {
    const { domain, config } = this.#o;
    const tool = Object.hasOwn(domain.tools, r.tool) ? domain.tools[r.tool] : undefined;
    if (tool?.executor.kind !== 'mcp' || tool.executor.agent !== r.id)
      throw new ThymosError(
        ErrorCode.TOOL_DENIED,
        `${r.tool} is not a tool of the domain that calls ${r.id} (an Mcp executor with agent = "${r.id}")`,
      );
    const from = Object.hasOwn(domain.agents, r.from) ? domain.agents[r.from] : undefined;
    if (!from || !Object.hasOwn(grantedTools(domain.tools, from.capabilities), r.tool))
      throw new ThymosError(ErrorCode.TOOL_DENIED, `${r.from} is not granted ${r.tool}, so it is not told where ${r.id} is`);
    let entry = this.#o.entry(r.id);
    let woken = false;
    if (!entry || entry.state === 'archived')
      throw new ThymosError(
        ErrorCode.AGENT_NOT_ACTIVE,
        `${r.id} is ${entry?.state ?? 'unknown'}: it answers tools only once restored (thymos restore ${r.id}); a tool does not wake it from the archive`,
      );
    const leaving = this.#o.stopping(r.id);
    if (r.wake && (entry.state !== 'active' || leaving)) {
      const report = await this.#o.wake(r.id, onProgress);
      const failed = report.failed.find((f) => f.id === r.id);
      if (failed) throw new ThymosError(knownCode(failed.code, ErrorCode.AGENT_START_FAILED), failed.message);
      entry = this.#o.entry(r.id);
      woken = true;
    }
    if (!woken && leaving)
      throw new ThymosError(
        ErrorCode.AGENT_NOT_ACTIVE,
        `${r.id} is going to sleep: it answers tools only while it runs (the tool ${r.tool} may say wake = true)`,
      );
    if (!entry || entry.port === null || (entry.state !== 'active' && entry.state !== 'listening')) {
      throw new ThymosError(
        ErrorCode.AGENT_NOT_ACTIVE,
        `${r.id} is ${entry?.state ?? 'unknown'}: it answers tools only while it runs${r.wake ? '' : ` (the tool ${r.tool} may say wake = true)`}`,
      );
    }
    if (config.mcp.require_token && !natsLinkPrivate(this.#o.natsUrl, config.natsTls !== undefined))
      throw new ThymosError(
        ErrorCode.UNAUTHORIZED,
        `${r.id}'s MCP token is not handed over this NATS link, which is neither loopback nor TLS: set [nats] tls_* for ${r.from}'s tool ${r.tool} to reach it`,
      );
    return {
      url: agentMcpUrl(config, entry.port),
      token: config.mcp.require_token ? (readAgentToken(config.dataPath, r.id) ?? null) : null,
      pid: entry.pid,
      woken,
    };
  }

  /**
   * Answers `agent_access`: where the client reaches running agent `id`, and its MCP token when
   * asked for. The token crosses NATS only where nobody between can read it: this supervisor's link
   * on loopback or TLS (the client checks its own); otherwise it is withheld, and a client on the
   * agent's host reads it from the agent's folder instead.
   */
  async access(id: string, wantToken = true): Promise<AgentAccess> {
    const { config } = this.#o;
    const entry = this.#o.entry(id);
    if (!entry) throw new ThymosError(ErrorCode.AGENT_NOT_FOUND, `no agent "${id}" in the fleet`);
    if (entry.port === null || (entry.state !== 'active' && entry.state !== 'listening'))
      throw new ThymosError(
        ErrorCode.AGENT_NOT_ACTIVE,
        `${id} is ${entry.state}: it has no MCP endpoint until it runs (reconcile or thymos start ${id})`,
      );
    const asked = wantToken && config.mcp.require_token;
    const withheld = asked && !natsLinkPrivate(this.#o.natsUrl, config.natsTls !== undefined);
    const token = asked && !withheld ? (readAgentToken(config.dataPath, id) ?? null) : null;
    // The pid tells a client its cached MCP session is still good: pm2's, since a restart by pm2 does not reach the registry.
    const pid = (await this.#o.livePid?.(id)) ?? entry.pid;
    return { url: agentMcpUrl(config, entry.port), port: entry.port, pid, token, withheld };
  }
}
