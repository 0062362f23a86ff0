import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, ThymosError } from '../shared/errors.js';

/**
 * Proves an agent's MCP endpoint answers: an MCP initialize handshake and a tools
 * listing that includes the agent's own tools, then the session is ended.
 */
export async function probeMcp(id: string, url: string, timeoutMs: number): Promise<void> {
  const client = new Client({ name: 'thymos-supervisor', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  try {
    await client.connect(transport, { timeout: timeoutMs });
    const { tools } = await client.listTools(undefined, { timeout: timeoutMs });
    if (!tools.some((t) => t.name === `get_${id}_state`)) {
      throw new Error(`the endpoint lists no get_${id}_state tool (another agent on this port?)`);
    }
    await transport.terminateSession().catch(() => undefined);
  } catch (err) {
    throw new ThymosError(ErrorCode.STARTUP_TIMEOUT, `${id}: MCP at ${url} did not answer: ${(err as Error).message}`, { cause: err });
  } finally {
    await client.close().catch(() => undefined);
  }
}
