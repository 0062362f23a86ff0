import { createHash } from 'node:crypto';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type CallToolResult, CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

import type { McpExecutor, Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, WireErrorSchema } from '../../shared/errors/index.js';
import { type AgentEndpoint, CHAIN_META, IDEMPOTENCY_META, IdempotencyKeySchema, REQUESTER_HEADER } from '../../shared/protocol/index.js';
import type { ExecutorContext } from './executor-context.js';

/** The longest key an agent takes from a caller (`IdempotencyKeySchema`). */
const MAX_KEY = 255;

/**
 * The idempotency key another agent of the fleet is sent for a call of `tool` under `key`. A key
 * it takes from a caller goes as it is. One it would refuse — a job's (`job:…`, which only the
 * called agent's own jobs may use) or a later generation (`…~2`, past `keyExpiresAfterS`) — goes
 * under the calling tool's name, `via:<tool>/<key>`, with `%`, `~` and anything not visible ASCII
 * percent-encoded (hashed when that is too long): the same call sends the same key on every
 * delivery and from every worker of the job, and no two tools of a job, and no two jobs, send the
 * same one.
 */
export function forwardedKey(tool: string, key: string): string {
  if (IdempotencyKeySchema.safeParse(key).success) return key;
  const encoded = key.replace(/[^\x21-\x24\x26-\x7d]/gu, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
  const via = `via:${tool}/${encoded}`;
  return via.length <= MAX_KEY ? via : `via:${tool}/sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/** How long opening a session may take, whoever waits for it. */
const CONNECT_TIMEOUT_MS = 10_000;

interface Session {
  client: Promise<Client>;
}

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
 * session per endpoint is kept open and reused; one whose transport fails is dropped, and the
 * next call connects afresh. The request carries the call's idempotency key in `_meta` (to
 * another agent, as it takes it: `forwardedKey`); to another agent also the chain of agents it
 * passed through, who calls (`Thymos-By: agent:<id>`) and the call's reason. Another agent's error keeps its Thymos code; any other is
 * TOOL_FAILED. The result is the structured content, else the text.
 */
export class McpExecutors {
  readonly #self: string;
  /** Sessions by endpoint key (URL, process, token). */
  readonly #clients = new Map<string, Session>();
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
    const fleet = exec.agent != null;
    const args = fleet && ctx.reason !== undefined ? { ...input, reason: ctx.reason } : input;
    // The chain of agents is the fleet's own business: a server outside it is told only the key.
    const _meta = fleet
      ? { [IDEMPOTENCY_META]: forwardedKey(ctx.tool, ctx.idempotencyKey), [CHAIN_META]: [...ctx.chain, this.#self] }
      : { [IDEMPOTENCY_META]: ctx.idempotencyKey };
    const session = this.#session(target);
    let result: CallToolResult;
    try {
      const client = await session.client;
      const raw = await client.callTool({ name: exec.tool, arguments: args, _meta }, undefined, {
        signal: ctx.signal,
        timeout: Math.max(1, ctx.deadline - Date.now()),
      });
      result = CallToolResultSchema.parse(raw);
    } catch (err) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      // A JSON-RPC error (an unknown tool, bad arguments, the remote's timeout) leaves the session good; anything else drops it.
      if (!(err instanceof McpError)) this.#drop(target.key, session);
      throw new ThymosError(
        ErrorCode.TOOL_FAILED,
        `${ctx.tool}: calling ${exec.tool} at ${target.name} failed: ${ctx.redact((err as Error).message)}`,
      );
    }
    if (result.isError) {
      // Only another agent of the fleet speaks Thymos's codes; a server outside it could claim any.
      const wire = WireErrorSchema.safeParse(result._meta?.['thymos/error']);
      const text = wire.success ? wire.data.message : textOf(result);
      const code = fleet && wire.success ? wire.data.code : ErrorCode.TOOL_FAILED;
      throw new ThymosError(code, `${ctx.tool}: ${target.name} answered: ${ctx.redact(text).slice(0, 600)}`, {
        details: { remote_code: wire.success ? wire.data.code : null },
      });
    }
    if (result.structuredContent !== undefined) return result.structuredContent;
    const text = textOf(result);
    if (!tool.output) return text;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ThymosError(
        ErrorCode.TOOL_OUTPUT_INVALID,
        `${ctx.tool}: the tool declares output, and ${target.name}'s ${exec.tool} answered neither structured content nor JSON text`,
      );
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
    if (!this.#find)
      throw new ThymosError(
        ErrorCode.NATS_UNAVAILABLE,
        `${ctx.tool}: ${this.#self} has no link to its fleet yet, so it cannot find ${agent}`,
      );
    const at = await this.#find(agent, ctx.tool, exec.wake, Math.max(1, ctx.deadline - Date.now()));
    return {
      name: agent,
      url: at.url,
      authorization: at.token ? `Bearer ${at.token}` : undefined,
      key: `${at.url} ${at.pid ?? ''} ${at.token ?? ''}`,
      caller: `agent:${this.#self}`,
    };
  }

  /**
   * The session for an endpoint (its URL, token and process): the one kept, else a new one. A
   * connect has its own deadline, not a caller's: calls that share it are not cut short by one
   * of them giving up. An older session with another agent at the same URL (it restarted) is closed.
   */
  #session(target: Target): Session {
    const kept = this.#clients.get(target.key);
    if (kept) return kept;
    // Another agent's address with a new process or token behind it: the old session is gone with the old process.
    if (target.caller) for (const [key, old] of this.#clients) if (key.startsWith(`${target.url} `)) this.#drop(key, old);
    const session: Session = {
      client: (async () => {
        const [{ Client: McpClient }, { StreamableHTTPClientTransport }] = await Promise.all([
          import('@modelcontextprotocol/sdk/client/index.js'),
          import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
        ]);
        const c = new McpClient({ name: `thymos-agent-${this.#self}`, version: '0.1.0' });
        const headers: Record<string, string> = {
          ...(target.authorization ? { authorization: target.authorization } : {}),
          ...(target.caller ? { [REQUESTER_HEADER]: target.caller } : {}),
        };
        await c.connect(new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers } }), {
          timeout: CONNECT_TIMEOUT_MS,
        });
        return c;
      })(),
    };
    // A connect that failed is not kept for the next call.
    session.client.catch(() => this.#drop(target.key, session));
    this.#clients.set(target.key, session);
    return session;
  }

  /** Forgets `session` (if it is still the one kept for `key`) and closes it. */
  #drop(key: string, session: Session): void {
    if (this.#clients.get(key) === session) this.#clients.delete(key);
    void session.client.then((c) => c.close()).catch(() => undefined);
  }
}

function textOf(result: CallToolResult): string {
  return result.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');
}
