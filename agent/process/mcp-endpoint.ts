import { agentTokenPath, type CleanupStack, ensureAgentToken, type Logger } from '../../shared/platform/index.js';
import type { LeaseFence } from '../links/lease-fence.js';
import type { AgentHttpServer } from '../mcp/agent-http-server.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';
import type { ToolCaller } from '../tools/tool-caller.js';
import type { AgentSetup } from './agent-setup.js';

/** What `serveMcpEndpoint` serves, and with what. */
export interface McpEndpointOptions {
  setup: AgentSetup;
  runtime: AgentRuntime;
  tools: ToolCaller;
  /** The HTTP server's module, loading since the process began (the MCP SDK is most of what an agent loads). */
  serverModule: Promise<typeof import('../mcp/agent-http-server.js')>;
  logger: Logger;
  /** Where the endpoint's close is pushed. */
  cleanup: CleanupStack;
  /** Its lease's fence (placement by lease): checked before each request and each write of an answer. */
  fence?: LeaseFence | undefined;
}

/**
 * Listens for MCP on the agent's port at `[agent] host`, behind the agent's own token when
 * `[mcp] require_token` is on (made once, kept in the data directory for its callers).
 */
export async function serveMcpEndpoint(options: McpEndpointOptions): Promise<AgentHttpServer> {
  const { setup, runtime, tools, logger, cleanup } = options;
  const { config } = setup;
  const { AgentHttpServer } = await options.serverModule;
  const token = config.mcp.require_token ? ensureAgentToken(agentTokenPath(config.dataPath, setup.id)) : undefined;
  const fence = options.fence;
  const http = new AgentHttpServer(runtime, config, logger, token, tools, fence ? () => fence.check() : undefined);
  await http.listen(config.agent.host, setup.port);
  cleanup.push(() => http.close());
  return http;
}
