import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import type { ThymosConfig } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { type CleanupStack, DataLock, portTaken } from '../../shared/platform/index.js';
import { MemoryStore } from '../memory/memory-store.js';

/** Where an agent keeps its files: `<data_dir>/agents/<id>/`. */
export function agentDataDir(config: ThymosConfig, id: string): string {
  return join(config.dataPath, 'agents', id);
}

/** An agent's folder, held by this process. */
export interface AgentData {
  dir: string;
  lock: DataLock;
  /** Set once the agent listens: from then on events may be replayed and acknowledged, and the folder is kept whatever happens. */
  started: { listening: boolean };
}

/** What claiming an agent's folder needs. */
export interface AgentDataOptions {
  id: string;
  /** The MCP port the agent will listen on: 0 for any. */
  port: number;
  config: ThymosConfig;
  /** Where what was taken is given back, last taken first, should the start fail or the agent stop. */
  cleanup: CleanupStack;
}

/**
 * Takes the agent's data lock, after checking that a first start can have its port. A first
 * start refused before it took anything in leaves no folder behind.
 */
export async function claimAgentData(options: AgentDataOptions): Promise<AgentData> {
  const { id, port, config, cleanup } = options;
  const dir = agentDataDir(config, id);
  // A first start refused before it could take anything in (a port in use, a bad context) leaves
  // no folder behind: pushed first, this runs last, after the database is closed.
  const fresh = !existsSync(dir);
  // A first start on a port another process holds is refused before it makes anything: the
  // database engine may write its files a moment after close, after the folder was removed.
  if (fresh && port !== 0 && (await portTaken(config.agent.host, port))) {
    throw new ThymosError(ErrorCode.PORT_IN_USE, `port ${port} on ${config.agent.host} is already in use; choose another with --port`, {
      details: { port },
    });
  }
  const started = { listening: false };
  // The engine may still be writing its last files a moment after close: ENOTEMPTY is tried again.
  cleanup.push(() => fresh && !started.listening && rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));
  const lock = DataLock.acquire(dir, { file: 'agent.pid', name: `agent ${id}`, code: ErrorCode.AGENT_ALREADY_RUNNING });
  cleanup.push(() => lock.release());
  return { dir, lock, started };
}

/** Opens the agent's private database in its claimed folder; it is closed at cleanup. */
export async function openAgentStore(options: { data: AgentData; config: ThymosConfig; cleanup: CleanupStack }): Promise<MemoryStore> {
  const { data, config, cleanup } = options;
  const store = await MemoryStore.open(join(data.dir, 'db'), { timeoutMs: config.agent.db_open_timeout_ms });
  cleanup.push(() => store.close());
  return store;
}
