import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type CallToolResult, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

import type { McpExecutor, Tool } from '../../shared/domain/tool-schema.js';
import { ErrorCode, ThymosError, WireErrorSchema } from '../../shared/errors/errors.js';
import { REQUESTER_HEADER } from '../../shared/protocol/fleet-names.js';
import type { AgentEndpoint } from '../../shared/protocol/supervisor-protocol.js';
import { CHAIN_META, IDEMPOTENCY_META } from '../../shared/protocol/tool-call.js';
import type { ExecutorContext } from './executor-context.js';

/** An endpoint to call: its name in messages, URL, Authorization header, what identifies its session, and who calls. */
interface Target {
  name: string;
  url: string;
  authorization: string | undefined;
  key: string;
  caller?: string;
}

/** Where another agent's MCP endpoint is, from the supervisor (waking it first with `wake`). */
export type FindEndpoint = (agent: string, tool: string, wake: boolean, timeoutMs: number) => Promise<AgentEndpoint>;

/**
 * Runs Mcp tools: a tool of another MCP server (its URL fixed in the schema, a bearer token
 * from a named variable) or of another agent of the fleet (its address and token asked of the
 * supervisor at each call, so a restarted or woken agent is found where it now is). One MCP
 * session per endpoint is kept open and reused; one that fails is dropped, and the next call
 * connects afresh. The request carries the call's idempotency key and the chain of agents it
 * passed through in `_meta`; to another agent it says who calls (`Thymos-By: agent:<id>`) and
 * passes the call's reason. A remote error keeps its Thymos code when it has one (else
 * TOOL_FAILED); the result is the structured content, else the text.
 */
export class McpExecutors {
  readonly #self: string;
  readonly #clients = new Map<string, { key: string; client: Promise<Client> }>();
  #find: FindEndpoint | undefined;

  constructor(self: string) {
    this.#self = self;
  }

  /** Gives the way to find other agents (once the agent is linked to its fleet). */
  link(find: FindEndpoint): void {
    this.#find = find;
  }

  async run(tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
    const exec = tool.executor as McpExecutor;
    const target = await this.#target(exec, ctx);
    const args = exec.agent != null && ctx.reason !== undefined ? { ...input, reason: ctx.reason } : input;
    const _meta = { [IDEMPOTENCY_META]: ctx.idempotencyKey, [CHAIN_META]: [...ctx.chain, this.#self] };
    let result: CallToolResult;
    try {
      const client = await this.#client(target, ctx);
      const raw = await client.callTool({ name: exec.tool, arguments: args, _meta }, undefined, { signal: ctx.signal, timeout: Math.max(1, ctx.deadline - Date.now()) });
      result = CallToolResultSchema.parse(raw);
    } catch (err) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      this.#drop(target.url);
      throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: calling ${exec.tool} at ${target.name} failed: ${ctx.redact((err as Error).message)}`);
    }
    if (result.isError) {
      const wire = WireErrorSchema.safeParse(result._meta?.['thymos/error']);
      const text = wire.success ? wire.data.message : textOf(result);
      throw new ThymosError(wire.success ? wire.data.code : ErrorCode.TOOL_FAILED, `${ctx.tool}: ${target.name} answered: ${ctx.redact(text).slice(0, 600)}`, { details: { remote_code: wire.success ? wire.data.code : null } });
    }
    if (result.structuredContent !== undefined) return result.structuredContent;
    const text = textOf(result);
    if (!tool.output) return text;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ThymosError(ErrorCode.TOOL_OUTPUT_INVALID, `${ctx.tool}: the tool declares output, and ${target.name}'s ${exec.tool} answered neither structured content nor JSON text`);
    }
  }

  /** Closes every session kept open (the agent is stopping). */
  async close(): Promise<void> {
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    await Promise.all(clients.map(async (c) => (await c.client.catch(() => undefined))?.close().catch(() => undefined)));
  }

  async #target(exec: McpExecutor, ctx: ExecutorContext): Promise<Target> {
    if (exec.url != null) {
      // A token's prefix, when set, is the whole scheme (`Token `); unset, it is a bearer token.
      const authorization = exec.token ? `${exec.token.prefix || 'Bearer '}${ctx.secret(exec.token.env)}` : undefined;
      return { name: new URL(exec.url).origin, url: exec.url, authorization, key: `${exec.url} ${authorization ?? ''}` };
    }
    const agent = exec.agent!;
    if (!this.#find) throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `${ctx.tool}: ${this.#self} has no link to its fleet yet, so it cannot find ${agent}`);
    const at = await this.#find(agent, ctx.tool, exec.wake, Math.max(1, ctx.deadline - Date.now()));
    return { name: agent, url: at.url, authorization: at.token ? `Bearer ${at.token}` : undefined, key: `${at.url} ${at.pid ?? ''} ${at.token ?? ''}`, caller: `agent:${this.#self}` };
  }

  /** The session for an endpoint: the one kept, unless the endpoint changed (another process, another token). */
  async #client(target: Target, ctx: ExecutorContext): Promise<Client> {
    const kept = this.#clients.get(target.url);
    if (kept?.key === target.key) return kept.client;
    if (kept) this.#drop(target.url);
    const client = (async () => {
      const [{ Client: McpClient }, { StreamableHTTPClientTransport }] = await Promise.all([import('@modelcontextprotocol/sdk/client/index.js'), import('@modelcontextprotocol/sdk/client/streamableHttp.js')]);
      const c = new McpClient({ name: `thymos-agent-${this.#self}`, version: '0.1.0' });
      const headers: Record<string, string> = { ...(target.authorization ? { authorization: target.authorization } : {}), ...(target.caller ? { [REQUESTER_HEADER]: target.caller } : {}) };
      await c.connect(new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers } }), { signal: ctx.signal, timeout: Math.max(1, ctx.deadline - Date.now()) });
      return c;
    })();
    this.#clients.set(target.url, { key: target.key, client });
    return client;
  }

  #drop(url: string): void {
    const kept = this.#clients.get(url);
    this.#clients.delete(url);
    void kept?.client.then((c) => c.close()).catch(() => undefined);
  }
}

function textOf(result: CallToolResult): string {
  return result.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');
}
