import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

import type { ThymosConfig } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { bearerMatches, type Logger } from '../../shared/platform/index.js';
import { parseWireJson } from '../../shared/protocol/index.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';
import type { ToolCaller } from '../tools/tool-caller.js';
import { type AgentMcpSession, agentResourceUris, createAgentMcpSession } from './agent-mcp-server.js';
import { cancelOnClose } from './cancel-on-close.js';
import { callsUri } from './declared-tools.js';
import {
  headerValue,
  isLoopbackOrigin,
  JSONRPC_INVALID_REQUEST,
  JSONRPC_PARSE_ERROR,
  JSONRPC_SERVER_ERROR,
  readBody,
  sendJsonRpcError,
} from './http-edge.js';

interface Session extends AgentMcpSession {
  transport: StreamableHTTPServerTransport;
  lastSeen: number;
}

/**
 * The agent's HTTP listener: `POST|GET|DELETE /mcp` (MCP Streamable HTTP, one stateful
 * session per client) and `GET /health`. It checks Host and Origin before anything
 * else (DNS-rebinding protection), caps body size, and answers garbage with JSON-RPC
 * errors instead of failing.
 */
export class AgentHttpServer {
  readonly #runtime: AgentRuntime;
  readonly #config: ThymosConfig;
  readonly #logger: Logger;
  readonly #sessions = new Map<string, Session>();
  readonly #server: Server;
  #allowedHosts = new Set<string>();
  /** Resources changed since the last notifications went out. */
  readonly #changed = new Set<string>();

  /** The bearer token `/mcp` asks for (`[mcp] require_token`); none when unset. */
  readonly #token: string | undefined;

  /** The agent's declared tools, served beside its own. */
  readonly #tools: ToolCaller | undefined;

  /** Stops the process when the agent's lease has ended (`LeaseFence.check`): run before a request is read and before any answer is written. */
  readonly #fence: (() => void) | undefined;

  constructor(runtime: AgentRuntime, config: ThymosConfig, logger: Logger, token?: string, tools?: ToolCaller, fence?: () => void) {
    this.#token = token;
    this.#tools = tools;
    this.#fence = fence;
    this.#runtime = runtime;
    this.#config = config;
    this.#logger = logger;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err) => {
        this.#logger.error({ err }, 'request failed');
        if (!res.headersSent) sendJsonRpcError(res, 500, JSONRPC_SERVER_ERROR, 'internal error', ErrorCode.INTERNAL);
        else res.end();
      });
    });
    this.#server.keepAliveTimeout = 5000;
    runtime.on('state', () => this.#notify(agentResourceUris(runtime.id).state));
    runtime.on('memory', () => this.#notify(agentResourceUris(runtime.id).memories));
    tools?.listen(() => this.#notify(callsUri(runtime.id)));
  }

  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** Binds host:port (0: any free port) and resolves to the port bound. A port already in use fails with PORT_IN_USE. */
  async listen(host: string, port: number): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        this.#server.off('listening', onListening);
        if (err.code === 'EADDRINUSE') {
          reject(
            new ThymosError(ErrorCode.PORT_IN_USE, `port ${port} on ${host} is already in use; choose another with --port`, {
              cause: err,
              details: { port },
            }),
          );
        } else {
          reject(new ThymosError(ErrorCode.INTERNAL, `cannot listen on ${host}:${port}: ${err.message}`, { cause: err }));
        }
      };
      const onListening = () => {
        this.#server.off('error', onError);
        resolve();
      };
      this.#server.once('error', onError);
      this.#server.once('listening', onListening);
      this.#server.listen(port, host);
    });
    const bound = (this.#server.address() as AddressInfo).port;
    this.#allowedHosts = new Set([
      `127.0.0.1:${bound}`,
      `localhost:${bound}`,
      `[::1]:${bound}`,
      `${host}:${bound}`,
      // The address other hosts are given for it (`[host] advertise`).
      ...(this.#config.host.advertise === undefined ? [] : [`${this.#config.host.advertise}:${bound}`]),
      ...this.#config.mcp.allowed_hosts,
    ]);
    return bound;
  }

  /** Stops accepting connections and closes every session. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#sessions.values()].map((s) => s.transport.close()));
    this.#sessions.clear();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.#fence) fenceAnswer(res, this.#fence);
    if (!this.#fromHere(req, res)) return;
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/health' && req.method === 'GET') {
      const state = this.#runtime.getState();
      res.writeHead(state.status === 'stopping' ? 503 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: state.status === 'ready', id: state.id, status: state.status, mode: state.mode }));
      return;
    }
    if (path !== '/mcp') {
      sendJsonRpcError(
        res,
        404,
        JSONRPC_INVALID_REQUEST,
        `no route ${req.method} ${path}; the MCP endpoint is /mcp`,
        ErrorCode.INVALID_INPUT,
      );
      return;
    }
    if (!this.#admitted(req, res)) return;
    const sessionId = headerValue(req.headers['mcp-session-id']);
    if (req.method === 'POST') return this.#post(req, res, sessionId);
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (sessionId === undefined) {
        sendJsonRpcError(res, 400, JSONRPC_INVALID_REQUEST, 'expected an mcp-session-id header', ErrorCode.INVALID_INPUT);
        return;
      }
      const session = this.#find(sessionId, res);
      if (session) await session.transport.handleRequest(req, res);
      return;
    }
    res.setHeader('allow', 'GET, POST, DELETE');
    sendJsonRpcError(res, 405, JSONRPC_INVALID_REQUEST, `method ${req.method} not allowed on /mcp`, ErrorCode.INVALID_INPUT);
  }

  /** Whether the request names an allowed host and, if it has an origin, a loopback one (DNS-rebinding protection); answers 403 if not. */
  #fromHere(req: IncomingMessage, res: ServerResponse): boolean {
    const host = req.headers.host ?? '';
    if (!this.#allowedHosts.has(host)) {
      sendJsonRpcError(
        res,
        403,
        JSONRPC_INVALID_REQUEST,
        `host ${JSON.stringify(host)} is not allowed (DNS-rebinding protection); add it to mcp.allowed_hosts`,
        ErrorCode.INVALID_INPUT,
      );
      return false;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !isLoopbackOrigin(origin)) {
      sendJsonRpcError(res, 403, JSONRPC_INVALID_REQUEST, `origin ${JSON.stringify(origin)} is not allowed`, ErrorCode.INVALID_INPUT);
      return false;
    }
    return true;
  }

  /** Whether `/mcp` takes the request: its bearer token when one is asked for, and the agent not stopping; answers 401 or 503 if not. */
  #admitted(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.#token !== undefined && !bearerMatches(headerValue(req.headers.authorization), this.#token)) {
      res.setHeader('www-authenticate', 'Bearer realm="thymos"');
      sendJsonRpcError(
        res,
        401,
        JSONRPC_INVALID_REQUEST,
        `${this.#runtime.id} asks for its bearer token (mcp.require_token): send "Authorization: Bearer <token>" with the token in <data_dir>/agents/${this.#runtime.id}/mcp-token`,
        ErrorCode.UNAUTHORIZED,
      );
      return false;
    }
    if (this.#runtime.status === 'stopping') {
      sendJsonRpcError(res, 503, JSONRPC_SERVER_ERROR, `${this.#runtime.id} is shutting down`, ErrorCode.AGENT_STOPPING);
      return false;
    }
    return true;
  }

  /** A JSON-RPC message: an initialize request opens a session; anything else goes to the session its header names. */
  async #post(req: IncomingMessage, res: ServerResponse, sessionId: string | undefined): Promise<void> {
    const body = await readBody(req, this.#config.mcp.max_body_bytes);
    if (body.kind === 'too_large') {
      sendJsonRpcError(
        res,
        413,
        JSONRPC_INVALID_REQUEST,
        `request body over ${this.#config.mcp.max_body_bytes} bytes (mcp.max_body_bytes)`,
        ErrorCode.INVALID_INPUT,
      );
      return;
    }
    let parsed: unknown;
    try {
      parsed = parseWireJson(body.text, 'body');
    } catch (err) {
      sendJsonRpcError(res, 400, JSONRPC_PARSE_ERROR, (err as Error).message, ErrorCode.INVALID_INPUT);
      return;
    }
    if (sessionId === undefined) {
      if (!isInitializeRequest(parsed)) {
        sendJsonRpcError(
          res,
          400,
          JSONRPC_INVALID_REQUEST,
          'expected an initialize request, or an mcp-session-id header from one',
          ErrorCode.INVALID_INPUT,
        );
        return;
      }
      const session = this.#open();
      await session.transport.handleRequest(req, res, parsed);
      return;
    }
    const session = this.#find(sessionId, res);
    if (!session) return;
    cancelOnClose(session.transport, res, parsed);
    await session.transport.handleRequest(req, res, parsed);
  }

  #open(): Session {
    const mcp = createAgentMcpSession(this.#runtime, this.#config, this.#logger, this.#tools);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.#sessions.set(id, session);
        this.#evictBeyondLimit();
        this.#logger.debug({ session: id }, 'mcp session opened');
      },
      onsessionclosed: (id) => {
        this.#sessions.delete(id);
        mcp.close();
      },
    });
    const session: Session = { ...mcp, transport, lastSeen: Date.now() };
    transport.onclose = () => {
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
      mcp.close();
    };
    void mcp.server.connect(transport);
    return session;
  }

  #find(id: string, res: ServerResponse): Session | undefined {
    const session = this.#sessions.get(id);
    if (!session) {
      sendJsonRpcError(
        res,
        404,
        JSONRPC_INVALID_REQUEST,
        `unknown or expired MCP session ${JSON.stringify(id.slice(0, 80))}; initialize again`,
        ErrorCode.INVALID_INPUT,
      );
      return undefined;
    }
    session.lastSeen = Date.now();
    return session;
  }

  #evictBeyondLimit(): void {
    const max = this.#config.mcp.max_sessions;
    if (this.#sessions.size <= max) return;
    const oldest = [...this.#sessions.entries()].sort((a, b) => a[1].lastSeen - b[1].lastSeen);
    for (const [id, s] of oldest.slice(0, this.#sessions.size - max)) {
      this.#sessions.delete(id);
      void s.transport.close();
      this.#logger.info({ session: id }, 'closed least recently used MCP session (mcp.max_sessions)');
    }
  }

  /**
   * Tells the sessions subscribed to `uri` that it changed: once for every change made in the
   * same turn of the event loop (a batch of heard events is one notification), and nothing at
   * all when no session subscribes.
   */
  #notify(uri: string): void {
    if (![...this.#sessions.values()].some((s) => s.subscriptions.has(uri))) return;
    if (this.#changed.size === 0) setImmediate(() => this.#sendChanges());
    this.#changed.add(uri);
  }

  #sendChanges(): void {
    const uris = [...this.#changed];
    this.#changed.clear();
    for (const s of this.#sessions.values()) {
      for (const uri of uris) {
        if (s.subscriptions.has(uri))
          s.server.server
            .sendResourceUpdated({ uri })
            .catch((err: unknown) => this.#logger.debug({ err }, 'resource notification not delivered'));
      }
    }
  }
}

/**
 * Runs `fence` now and before every write of the answer: an agent whose lease ended while a call was
 * in flight (or while the process was paused) exits before it answers anything.
 */
export function fenceAnswer(res: ServerResponse, fence: () => void): void {
  fence();
  for (const method of ['writeHead', 'write', 'end'] as const) {
    const original = res[method].bind(res) as (...args: unknown[]) => unknown;
    (res as unknown as Record<string, (...args: unknown[]) => unknown>)[method] = (...args: unknown[]) => {
      fence();
      return original(...args);
    };
  }
}
