import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { needsReason, type Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import {
  CallChainSchema,
  CHAIN_META,
  IDEMPOTENCY_META,
  IdempotencyKeySchema,
  REQUESTER_HEADER,
  type ToolCallRecord,
} from '../../shared/protocol/index.js';
import type { ToolCaller } from '../tools/tool-caller.js';
import { inputShape, outputShape, toolAnnotations } from '../tools/tool-shapes.js';
import { guard, toolError } from './tool-kit.js';

/** URI of the catalogue of an agent's declared tools. */
export const toolsUri = (id: string) => `agent://${id}/tools`;
/** URI of an agent's tool calls: those waiting for approval and the latest; subscribe to hear of each change. */
export const callsUri = (id: string) => `agent://${id}/calls`;

/**
 * Who made a call, as its record keeps it: the `Thymos-By` a Thymos client sends
 * (program#pid@host, what the supervisor's audit log knows it by), else `mcp:<client name>`.
 * Both are what the client says of itself.
 */
export function callerOf(server: McpServer, extra: RequestHandlerExtra<ServerRequest, ServerNotification>): string {
  const by = extra.requestInfo?.headers[REQUESTER_HEADER.toLowerCase()];
  if (typeof by === 'string' && /^[\w.@#:/-]{1,200}$/.test(by)) return by;
  const name = server.server.getClientVersion()?.name;
  return `mcp:${name ? name.replace(/[^\w.@-]/g, '_').slice(0, 64) : 'unknown'}`;
}

/** The caller's own idempotency key, from the request's `_meta`; INVALID_INPUT when it is not one. */
export function callerKey(extra: RequestHandlerExtra<ServerRequest, ServerNotification>): string | undefined {
  const given = extra._meta?.[IDEMPOTENCY_META];
  if (given === undefined) return undefined;
  const parsed = IdempotencyKeySchema.safeParse(given);
  if (!parsed.success)
    throw new ThymosError(ErrorCode.INVALID_INPUT, `_meta.${IDEMPOTENCY_META}: ${parsed.error.issues[0]!.message}`, {
      location: { path: `_meta.${IDEMPOTENCY_META}` },
    });
  return parsed.data;
}

/** The agents a chain of Mcp calls passed through before this request, from its `_meta`; INVALID_INPUT when it is not such a list. */
export function callChain(extra: RequestHandlerExtra<ServerRequest, ServerNotification>): string[] | undefined {
  const given = extra._meta?.[CHAIN_META];
  if (given === undefined) return undefined;
  const parsed = CallChainSchema.safeParse(given);
  if (!parsed.success)
    throw new ThymosError(ErrorCode.INVALID_INPUT, `_meta.${CHAIN_META}: expected a list of agent ids (at most 64)`, {
      location: { path: `_meta.${CHAIN_META}` },
    });
  return parsed.data;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What a finished call answers: its result (structured when the tool declares output), or its coded error; the record in `_meta`. */
export function callResult(record: ToolCallRecord, tool: Tool): CallToolResult {
  const meta = {
    'thymos/call': {
      call_id: record.call_id,
      status: record.status,
      idempotency_key: record.idempotency_key,
      ...(record.replayed ? { replayed: true } : {}),
    },
  };
  if (record.error) {
    const e = new ThymosError(record.error.code, record.error.message, {
      ...(record.error.details ? { details: record.error.details } : {}),
    });
    const out = toolError(e);
    return { ...out, _meta: { ...out._meta, ...meta } };
  }
  if (record.status === 'pending') {
    const waiting = { status: 'pending', call_id: record.call_id, expires_at: record.expires_at ?? '' };
    return {
      content: [
        {
          type: 'text',
          text: `${JSON.stringify(waiting)}\n${record.tool} waits for a person's approval; get_call or the resource ${callsUri(record.agent)} tells when it is decided.`,
        },
      ],
      structuredContent: waiting,
      _meta: meta,
    };
  }
  if (record.status === 'running') {
    // A repeated idempotency key whose call still runs (approved a moment ago, say): where it stands, not a result.
    const running = { status: 'running', call_id: record.call_id };
    return {
      content: [
        {
          type: 'text',
          text: `${JSON.stringify(running)}\n${record.tool} is running under this idempotency key; get_call tells how it ends.`,
        },
      ],
      structuredContent: running,
      _meta: meta,
    };
  }
  const text = typeof record.result === 'string' ? record.result : JSON.stringify(record.result);
  return {
    content: [{ type: 'text', text }],
    ...(tool.output && isObject(record.result) ? { structuredContent: record.result } : {}),
    _meta: meta,
  };
}

/** What a model or a person reads about one tool: no executor details. */
export function catalogueEntry(name: string, tool: Tool) {
  return {
    name,
    description: tool.description,
    tags: tool.tags,
    examples: tool.examples,
    input: z.toJSONSchema(z.object(inputShape(tool)).strict()),
    ...(tool.output ? { output: z.toJSONSchema(z.object(outputShape(tool)!)) } : {}),
    sideEffect: tool.sideEffect,
    permission: tool.permission,
    reasonRequired: needsReason(tool),
    idempotent: tool.idempotencyKey != null,
  };
}

/**
 * Registers the tools the agent's capabilities grant, each with the JSON Schema of its input
 * (and output), MCP's annotations for its classes, and the governed path behind it; `get_call`
 * for the record of one call; and the catalogue resource `agent://<id>/tools`. An agent granted no tool has none of these.
 */
export function registerDeclaredTools(server: McpServer, id: string, caller: ToolCaller): void {
  for (const [name, tool] of Object.entries(caller.tools)) {
    // A `confirm` call answers `{ status: "pending", call_id }` first, so it advertises no output schema; its result is checked against `output` all the same.
    const output = tool.permission === 'confirm' ? undefined : outputShape(tool);
    server.registerTool(
      name,
      {
        description: `${tool.description}${needsReason(tool) ? ' Give a reason.' : ''}`,
        // Strict, as on the model path: an unknown key is refused (INVALID_INPUT naming it), never dropped.
        inputSchema: z.object(inputShape(tool)).strict(),
        ...(output ? { outputSchema: output } : {}),
        annotations: { title: name, ...toolAnnotations(tool) },
        _meta: { 'thymos/tool': { sideEffect: tool.sideEffect, permission: tool.permission, tags: tool.tags } },
      },
      async (args: Record<string, unknown>, extra) =>
        guard(async () =>
          callResult(
            await caller.call(name, args, {
              caller: callerOf(server, extra),
              signal: extra.signal,
              idempotencyKey: callerKey(extra),
              chain: callChain(extra),
            }),
            tool,
          ),
        ),
    );
  }
  server.registerTool(
    'get_call',
    {
      title: 'One tool call',
      description: "The record of one of this agent's tool calls by its call_id: status, arguments, reason, caller, result or error.",
      inputSchema: { call_id: z.string().min(1).max(64).describe('The call_id a tool call answered with.') },
      annotations: { readOnlyHint: true },
    },
    async ({ call_id }) =>
      guard(async () => {
        const record = await caller.getCall(call_id);
        if (!record)
          throw new ThymosError(ErrorCode.NOT_FOUND, `${id} has no call ${JSON.stringify(call_id)}`, { location: { path: 'call_id' } });
        return { content: [{ type: 'text', text: JSON.stringify(record) }], structuredContent: record };
      }),
  );
  const calls = callsUri(id);
  server.registerResource(
    'calls',
    calls,
    {
      title: `Tool calls of ${id}`,
      description:
        'Its calls that wait for approval, and its latest calls, newest first. Subscribe to be told when one changes; get_call reads one.',
      mimeType: 'application/json',
    },
    async () => ({ contents: [{ uri: calls, mimeType: 'application/json', text: JSON.stringify(await caller.calls()) }] }),
  );
  const uri = toolsUri(id);
  server.registerResource(
    'tools',
    uri,
    {
      title: `Tools of ${id}`,
      description: 'The declared tools this agent may call: name, description, tags, example phrasings, input schema, classes.',
      mimeType: 'application/json',
    },
    async () => ({
      contents: [
        {
          uri,
          mimeType: 'application/json',
          text: JSON.stringify(Object.entries(caller.tools).map(([name, tool]) => catalogueEntry(name, tool))),
        },
      ],
    }),
  );
}
