/**
 * The agent's MCP endpoint: the HTTP server on its port and the tools, resources and prompt it serves.
 */
export { AgentHttpServer } from './agent-http-server.js';
export { agentResourceUris, THYMOS_VERSION } from './agent-mcp-server.js';
