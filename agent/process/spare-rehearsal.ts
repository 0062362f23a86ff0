import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';

import type { ThymosConfig } from '../../shared/config/index.js';
import type { ConceptExtractor, Logger } from '../../shared/platform/index.js';
import { AgentModels } from '../llm/agent-models.js';
import { AgentHttpServer } from '../mcp/agent-http-server.js';
import type { AgentMemory } from '../memory/agent-memory.js';
import { MemoryStore } from '../memory/memory-store.js';
import { assembleAgent } from './agent-assembly.js';
import { agentSetupOf } from './agent-setup.js';

/** The made-up agent a spare rehearses with; never a fleet's agent (ids there are the domain's). */
const REHEARSAL_ID = 'spare_rehearsal';

/**
 * A spare's dress rehearsal before it says ready: a made-up agent on a throwaway database in
 * `dir`, served over MCP on a free loopback port, that an MCP client initializes, tells
 * something, asks for it back and (when dialogue runs offline, so nothing leaves the machine)
 * talks to. The first run of each of those paths in a process costs tens of milliseconds —
 * the engine's first open, compiling the MCP request path, the first request to the concept
 * service (`extractor`) — which a claim then no longer pays. Everything is closed and the folder removed
 * before the spare can be claimed: no agent's data is touched, and nothing of the rehearsal
 * is left for the agent the spare becomes. The user's behaviour module is not loaded for it.
 */
export async function rehearseAgent(
  config: ThymosConfig,
  dir: string,
  logger: Logger,
  extractor?: ConceptExtractor,
): Promise<{ steps: string[]; ms: number }> {
  const started = performance.now();
  rmSync(dir, { recursive: true, force: true });
  const quiet = logger.child({}, { level: 'warn' });
  const rehearsalConfig: ThymosConfig = { ...config, behaviorPath: undefined };
  const store = await MemoryStore.open(dir, { timeoutMs: 30_000 });
  let http: AgentHttpServer | undefined;
  let memory: AgentMemory | undefined;
  try {
    // No start context and no domain: the made-up agent runs with a default persona.
    const setup = agentSetupOf({
      options: { agentId: REHEARSAL_ID, port: 1, mode: 'active' },
      config: rehearsalConfig,
      context: undefined,
      domain: undefined,
      logger: quiet,
    });
    const { runtime, memory: assembled } = await assembleAgent({ setup, store, logger: quiet, extractor });
    memory = assembled;
    runtime.setStatus('ready');
    // Its endpoint asks for a token of its own, as every agent's does: nobody else can call the rehearsal's model while it runs.
    const token = randomBytes(24).toString('base64url');
    http = new AgentHttpServer(runtime, rehearsalConfig, quiet, token);
    const port = await http.listen('127.0.0.1', 0);
    const offline = !new AgentModels(REHEARSAL_ID, config.llm, setup.definition, {}, {}).usesModel('dialogue');
    const steps = await rehearseMcp(`http://127.0.0.1:${port}/mcp`, token, offline);
    return { steps, ms: Math.round(performance.now() - started) };
  } finally {
    await http?.close();
    // The memory hooks (concepts) still running would write to the database after it closed.
    await memory?.settle().catch(() => undefined);
    await store.close();
    removeRehearsal(dir, quiet);
  }
}

/** How long a rehearsal's database may take to be removable after it closed. */
const REMOVE_WITHIN_MS = 10_000;

/**
 * Removes the rehearsal's database. The engine keeps writing a closed database's files for a
 * moment (surrealdb.js#592), so a folder that is not empty yet is removed in the background,
 * tried every 100 ms for up to 10 s; one that still stays is removed by the next spare's
 * rehearsal in the same slot.
 */
function removeRehearsal(dir: string, logger: Logger): void {
  const deadline = Date.now() + REMOVE_WITHIN_MS;
  const attempt = () => {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      if (Date.now() < deadline) setTimeout(attempt, 100).unref();
      else logger.warn({ err: (err as Error).message, dir }, 'the rehearsal database could not be removed yet');
    }
  };
  attempt();
}

/** An MCP session the way a client runs one: initialize, a few tool calls, then the session's end; the steps it ran. */
async function rehearseMcp(url: string, token: string, talk: boolean): Promise<string[]> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
  };
  const post = async (body: object): Promise<void> => {
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', ...body }) });
    const session = res.headers.get('mcp-session-id');
    if (session) headers['mcp-session-id'] = session;
    const text = await res.text();
    if (!res.ok || text.includes('"isError":true'))
      throw new Error(
        `the spare's rehearsal failed: ${'method' in body ? String(body.method) : ''} answered HTTP ${res.status} ${text.slice(0, 200)}`,
      );
  };
  const call = (id: number, name: string, args: object) => post({ id, method: 'tools/call', params: { name, arguments: args } });
  await post({
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'thymos-spare', version: '0' } },
  });
  await post({ method: 'notifications/initialized' });
  await call(2, 'remember', { content: 'The rehearsal bell rang twice at the old mill before dawn.' });
  // A query that names a time, so a claimed agent's first such query finds chrono's date parsers warm.
  await call(3, 'recall', { query: 'what rang at the mill this morning' });
  if (talk) await call(4, `talk_to_${REHEARSAL_ID}`, { message: 'Did you hear the bell at the mill?' });
  await fetch(url, { method: 'DELETE', headers }).then((r) => r.body?.cancel());
  return ['initialize', 'remember', 'recall', ...(talk ? ['talk'] : []), 'end'];
}
