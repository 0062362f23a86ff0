import { type ChildProcess, spawn } from 'node:child_process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { loadConfig } from '../../shared/config/thymos-config.js';
import { readAgentToken } from '../../shared/platform/agent-token.js';
import { withDeadline } from '../../shared/platform/deadline.js';
import { THYMOS_BIN } from './workspace.js';

/** An agent started as a child process of the test, exactly as pm2 would start it. */
export interface AgentChild {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) once it has exited. */
  exited: Promise<number | string>;
  /** Sends a signal and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
  /** A connected MCP client (the SDK's own client), with the agent's token when it asks for one. */
  client(): Promise<Client>;
  /** The headers an MCP client of this agent sends: its bearer token (`[mcp] require_token`, on by default), when it has one. */
  headers(): Record<string, string>;
}

export interface StartAgentOptions {
  id: string;
  port: number;
  config: string;
  mode?: 'active' | 'passive';
  context?: string;
  /** Resolve on 'ready' (default) or as soon as it is spawned. */
  waitReady?: boolean;
  timeoutMs?: number;
  /** The Node binary to run it with. @default process.execPath */
  node?: string;
  /** Its environment. @default process.env */
  env?: NodeJS.ProcessEnv;
}

const running = new Set<ChildProcess>();

/** Starts `thymos agent …` and waits for its `ready` message (pm2's wait_ready signal). */
export async function startAgent(options: StartAgentOptions): Promise<AgentChild> {
  const args = [THYMOS_BIN, 'agent', '--agent-id', options.id, '--port', String(options.port), '--config', options.config];
  if (options.mode) args.push('--mode', options.mode);
  if (options.context) args.push('--context', options.context);
  const child = spawn(options.node ?? process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: options.env ?? process.env,
  });
  running.add(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? -1);
    });
  });
  const clients: Client[] = [];
  const agent: AgentChild = {
    child,
    pid: child.pid!,
    port: options.port,
    url: `http://127.0.0.1:${options.port}/mcp`,
    output: () => out,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      await Promise.allSettled(clients.map((c) => c.close()));
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const result = await withDeadline(exited, 15_000, () => 'timeout' as const);
      if (result === 'timeout') {
        child.kill('SIGKILL');
        return exited;
      }
      return result;
    },
    headers(): Record<string, string> {
      const token = readAgentToken(loadConfig(options.config).dataPath, options.id);
      return token ? { authorization: `Bearer ${token}` } : {};
    },
    async client() {
      const client = new Client({ name: 'thymos-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(agent.url), { requestInit: { headers: agent.headers() } }));
      clients.push(client);
      return client;
    },
  };
  if (options.waitReady === false) return agent;
  const ready = new Promise<'ready'>((resolve) => {
    child.on('message', (m) => {
      if (m === 'ready') resolve('ready');
    });
  });
  const result = await withDeadline(Promise.race([ready, exited]), options.timeoutMs ?? 20_000, () => 'timeout' as const);
  if (result !== 'ready') {
    if (result === 'timeout') child.kill('SIGKILL');
    throw new Error(`agent ${options.id} did not become ready (${result}):\n${out}`);
  }
  return agent;
}

/** Kills, by pid, every agent a test started and that is still running. */
export async function killAllAgents(): Promise<void> {
  const children = [...running];
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r)))));
}
