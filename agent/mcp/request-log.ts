import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { isThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';

type Handler = (request: { method: string; params?: Record<string, unknown> }, extra: unknown) => Promise<unknown>;

/**
 * One debug line per MCP request, when it is answered: the method, the tool or resource, how
 * long it took and how it ended (`ok`, the Thymos error code a tool result carries, or the
 * JSON-RPC error code). A tool's arguments are left out unless `withArguments` (`[log]
 * mcp_arguments`): they may hold what a player said. Wraps the handlers registered so far, so
 * it is called once every tool and handler is in place; with debug off it costs one level check.
 */
export function logRequests(server: Server, logger: Logger, withArguments: boolean): void {
  // The SDK keeps its handlers in a map it calls private; wrapping them there is the one place
  // every request passes, whoever registered its handler (McpServer or this agent).
  const handlers = (server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers;
  for (const [method, handler] of handlers) {
    handlers.set(method, async (request, extra) => {
      if (!logger.isLevelEnabled('debug')) return handler(request, extra);
      const started = performance.now();
      const params = request.params ?? {};
      const about = {
        method,
        ...(typeof params.name === 'string' ? { tool: params.name } : {}),
        ...(typeof params.uri === 'string' ? { uri: params.uri } : {}),
        ...(withArguments && params.arguments !== undefined ? { arguments: params.arguments } : {}),
      };
      const done = (code: string) =>
        logger.debug({ ...about, ms: Math.round((performance.now() - started) * 10) / 10, code }, 'mcp request');
      try {
        const result = await handler(request, extra);
        done(resultCode(result));
        return result;
      } catch (err) {
        done(err instanceof McpError ? `JSONRPC_${err.code}` : isThymosError(err) ? err.code : 'INTERNAL');
        throw err;
      }
    });
  }
}

/** A tool result that failed, with the Thymos code it carries (every tool of an agent's does). */
const FailedToolResultSchema = z.object({
  isError: z.literal(true),
  _meta: z
    .object({ 'thymos/error': z.object({ code: z.string() }) })
    .partial()
    .optional(),
});

/** `ok`, or the code of the error a tool result carries in `_meta["thymos/error"]`. */
function resultCode(result: unknown): string {
  const failed = FailedToolResultSchema.safeParse(result);
  if (!failed.success) return 'ok';
  return failed.data._meta?.['thymos/error']?.code ?? 'TOOL_ERROR';
}
