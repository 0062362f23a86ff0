import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  type CallToolResult,
  ErrorCode as McpErrorCode,
  type LoggingLevel,
  LoggingLevelSchema,
  McpError,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import type { ThymosConfig } from '../../shared/config/index.js';
import { logFeedOf } from '../../shared/engines/index.js';
import { type Logger, type LogRecord } from '../../shared/platform/index.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';
import type { ToolCaller } from '../tools/tool-caller.js';
import { registerConceptTools, registerLinkTools } from './concept-tools.js';
import { callsUri, registerDeclaredTools } from './declared-tools.js';
import { registerContextTool, registerDialogueTools, registerMessageTools } from './dialogue-tools.js';
import { registerIntentTools } from './intent-tools.js';
import { registerConsolidationTools, registerMemoryTools } from './memory-tools.js';
import { registerReasoningTools } from './reasoning-tools.js';
import { logRequests } from './request-log.js';
import { registerStateTools } from './state-tools.js';
import { codedSdkToolError, QUERY_MAX, type ToolContext } from './tool-kit.js';

/** Version reported to MCP clients. */
export const THYMOS_VERSION = '0.1.0';

/** URIs of an agent's resources. */
export function agentResourceUris(id: string): { state: string; memories: string } {
  return { state: `agent://${id}/state`, memories: `agent://${id}/memories` };
}

/** One MCP session's server. Sessions share the runtime; each gets its own subscriptions. */
export interface AgentMcpSession {
  server: McpServer;
  /** URIs this session subscribed to. */
  subscriptions: Set<string>;
  /** Ends what the session listens to (its log records); called once it is closed. */
  close(): void;
}

/** The least pino level (10 trace … 60 fatal) each MCP logging level takes. */
const PINO_MIN: Record<LoggingLevel, number> = {
  debug: 10,
  info: 30,
  notice: 40,
  warning: 40,
  error: 50,
  critical: 60,
  alert: 60,
  emergency: 60,
};

/**
 * logging/setLevel with any level, so that an unknown one is refused here as invalid params
 * naming the levels (the SDK's own schema refuses it as an internal error).
 */
const SetLevelRequest = z.object({ method: z.literal('logging/setLevel'), params: z.looseObject({ level: z.unknown() }) });

/** The MCP level of a pino record. */
function mcpLevel(level: number): LoggingLevel {
  if (level >= 60) return 'critical';
  if (level >= 50) return 'error';
  if (level >= 40) return 'warning';
  if (level >= 30) return 'info';
  return 'debug';
}

/**
 * Builds the MCP server one session talks to: tools `talk_to_<id>`,
 * `query_<id>_knowledge`, `get_<id>_state`, `remember`, `recall`; resources
 * `agent://<id>/state` (subscribable) and `agent://<id>/memories`; prompt `persona`.
 */
export function createAgentMcpSession(runtime: AgentRuntime, config: ThymosConfig, logger?: Logger, tools?: ToolCaller): AgentMcpSession {
  const id = runtime.id;
  const persona = runtime.definition.persona;
  const limits = config.memory;
  const uris = agentResourceUris(id);
  const server = new McpServer(
    { name: `thymos-agent-${id}`, title: persona.name, version: THYMOS_VERSION },
    {
      capabilities: { resources: { subscribe: true, listChanged: false }, tools: {}, prompts: {}, logging: {} },
      instructions: `${persona.name} (${id}), an agent of a Thymos fleet. Talk with talk_to_${id}; read with get_${id}_state, query_${id}_knowledge and recall.`,
    },
  );
  // The SDK answers refused arguments and unknown tool names itself, as bare `MCP error -32602`
  // text; this is its one hook for that answer (a method TypeScript calls private).
  (server as unknown as { createToolError: (message: string) => CallToolResult }).createToolError = codedSdkToolError;
  const subscriptions = new Set<string>();

  const content = z
    .string()
    .min(1, 'expected non-empty content')
    .max(limits.max_content_chars, `expected at most ${limits.max_content_chars} characters (memory.max_content_chars)`);
  const k = z
    .number()
    .int()
    .min(1)
    .max(limits.recall_max_k)
    .optional()
    .describe(`How many memories (default ${limits.recall_default_k}, at most ${limits.recall_max_k}).`);
  const query = z.string().min(1).max(QUERY_MAX).describe('What to look for, in words.');

  const ctx: ToolContext = { server, runtime, id, persona, limits, uris, content, k, query };
  registerDialogueTools(ctx);
  registerContextTool(ctx);
  registerMessageTools(ctx);
  registerMemoryTools(ctx);
  registerConsolidationTools(ctx);
  registerConceptTools(ctx);
  registerLinkTools(ctx);
  registerReasoningTools(ctx);
  registerStateTools(ctx);
  registerIntentTools(ctx);
  const hasTools = tools !== undefined && Object.keys(tools.tools).length > 0;
  if (hasTools) registerDeclaredTools(server, id, tools);

  const subscribable = [uris.state, uris.memories, ...(hasTools ? [callsUri(id)] : [])];
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (!subscribable.includes(uri))
      throw new McpError(McpErrorCode.InvalidParams, `no resource ${uri}; expected ${subscribable.join(', ')}`);
    subscriptions.add(uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  // logging/setLevel: from then on the session gets the agent's own log records at that level
  // and above, of those the agent writes ([log] level); nothing before it asks.
  const feed = logger ? logFeedOf(logger) : undefined;
  let unlisten: (() => void) | undefined;
  server.server.setRequestHandler(SetLevelRequest, async (request) => {
    const level = LoggingLevelSchema.safeParse(request.params.level);
    if (!level.success) {
      throw new McpError(
        McpErrorCode.InvalidParams,
        `logging/setLevel: level ${JSON.stringify(request.params.level)} is not one of ${LoggingLevelSchema.options.join(', ')}`,
      );
    }
    unlisten?.();
    unlisten = feed?.listen(PINO_MIN[level.data], (record: LogRecord) => {
      const { level, pid: _pid, agent: _agent, ...data } = record;
      server.server.sendLoggingMessage({ level: mcpLevel(level), logger: `thymos-agent-${id}`, data }).catch(() => undefined);
    });
    return {};
  });

  if (logger) logRequests(server.server, logger, config.log.mcp_arguments);
  return { server, subscriptions, close: () => unlisten?.() };
}
