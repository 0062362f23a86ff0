import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { AgentMemory } from '../agent/memory/agent-memory.js';
import { MemoryStore } from '../agent/memory/memory-store.js';
import type { CallStore } from '../agent/tools/call-store.js';
import { ToolCaller } from '../agent/tools/tool-caller.js';
import { configFromObject } from '../shared/config/thymos-config.js';
import { parseDomainSchema } from '../shared/domain/domain-schema.js';
import { createLogger } from '../shared/engines/pino-logger.js';
import { tempDir } from '../test/helpers/temp-dir.js';
import { withBenchFleet } from './bench-fleet.js';
import { AMENDS_THYMOS } from './domain-text.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, removeDbDir, round } from './stats.js';

const ROUNDS = 300;
const WARMUP = 30;
/** Scripts stopped at their timeout, each followed by a call that waits for the worker started in its place. */
const RESPAWNS = 10;
/** The program a Subprocess tool runs, and the bench spawns bare: it does nothing, so what is measured is the spawning. */
const PROGRAM = '/bin/true';

function domainPkl(port: number, dir: string): string {
  writeFileSync(
    join(dir, 'tools.mjs'),
    'export function echo(input) { return { said: input.word }; }\nexport function spin() { for (;;) {} }\n',
  );
  return `${AMENDS_THYMOS}
agents {
  ["desk"] { persona { name = "Desk" }; capabilities { "http_read"; "script_read"; "script_spin"; "program_read"; "ask_clerk" } }
  ["clerk"] { persona { name = "Clerk" }; capabilities { "echo" } }
}
tools {
  ["http_read"] { description = "Reads from the local service"; sideEffect = "read_only"; executor = new Http { url = "http://127.0.0.1:${port}/item" } }
  ["script_read"] { description = "A Script that returns at once"; input { ["word"] {} }; sideEffect = "read_only"; executor = new Script { path = ${JSON.stringify(join(dir, 'tools.mjs'))}; export = "echo" } }
  ["script_spin"] { description = "A Script that never returns (a synchronous loop)"; sideEffect = "read_only"; timeoutMs = 50; executor = new Script { path = ${JSON.stringify(join(dir, 'tools.mjs'))}; export = "spin" } }
  ["echo"] { description = "The clerk's Script that returns at once"; input { ["word"] {} }; sideEffect = "read_only"; executor = new Script { path = ${JSON.stringify(join(dir, 'tools.mjs'))}; export = "echo" } }
  ["program_read"] { description = "Runs a program that does nothing"; sideEffect = "read_only"; executor = new Subprocess { command = "${PROGRAM}" } }
  ["ask_clerk"] { description = "The clerk's echo, through the fleet"; input { ["word"] {} }; sideEffect = "read_only"; executor = new Mcp { agent = "clerk"; tool = "echo" } }
}
`;
}

async function ms(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function tool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<void> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
}

/** A call expected to fail with `code`; anything else is the bench's error. */
async function toolFails(client: Client, name: string, code: string): Promise<void> {
  const r = (await client.callTool({ name, arguments: {} })) as CallToolResult;
  if (!r.isError || !JSON.stringify(r.content).includes(code))
    throw new Error(`${name}: expected ${code}, got ${JSON.stringify(r.content)}`);
}

function bareSpawn(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROGRAM, [], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

const p = (xs: number[], q: number) => round(quantile(xs, q), 2);

/**
 * The governed path in this process, on a Script that returns at once: with the agent's own
 * database (each call saved as running, then as ended, and remembered as a `tool_call` memory)
 * and with a store that keeps nothing. The difference is what recording a call costs.
 */
async function recordingShare(): Promise<{ withDb: number[]; before: number[]; without: number[] }> {
  const dir = tempDir('thymos-bench-record-');
  writeFileSync(join(dir, 'tools.mjs'), 'export function echo(input) { return input.word; }\n');
  const domain = parseDomainSchema(
    {
      tools: {
        echo: {
          description: 'Echo',
          input: { word: {} },
          sideEffect: 'read_only',
          executor: { kind: 'script', path: 'tools.mjs', export: 'echo' },
        },
      },
    },
    join(dir, 'world.pkl'),
  );
  const store = await MemoryStore.open(join(dir, 'db'), { timeoutMs: 30_000 });
  const memory = await AgentMemory.load(store, configFromObject({}).memory);
  const nothing: CallStore = {
    saveCall: async () => undefined,
    getCall: async () => undefined,
    callsWithStatus: async () => [],
    callWithKey: async () => undefined,
    claimKey: async () => undefined,
  };
  const caller = (
    calls: CallStore,
    remember: (m: Parameters<AgentMemory['rememberMany']>[0]) => Promise<unknown>,
    recordReadsWithinMs: number,
  ) =>
    new ToolCaller({
      agent: 'desk',
      tools: domain.tools,
      gate: {
        id: 'desk',
        call: (fn) => fn(),
        isActive: () => true,
        requireActive: () => undefined,
        signal: () => new AbortController().signal,
      },
      calls,
      remember,
      world: () => {
        throw new Error('no world');
      },
      allowAdmin: false,
      approvalTimeoutS: 60,
      maxPending: 10,
      maxHops: 4,
      recordReadsWithinMs,
      env: {},
      logger: createLogger({ level: 'silent' }),
    });
  // As an agent does by default: the record and the memory of a read-only call written behind, together, within a second.
  const real = caller(store, (m) => memory.rememberMany(m, Date.now(), 1000), 1000);
  // With `[tools] record_reads_within_ms = 0`: the record written before the call answers.
  const first = caller(store, (m) => memory.rememberMany(m, Date.now(), 1000), 0);
  const bare = caller(nothing, async () => undefined, 0);
  const withDb: number[] = [];
  const before: number[] = [];
  const without: number[] = [];
  try {
    // Each round takes the three in a turned order, so none always follows the same one (a write behind lands during the next call).
    const callers = [real, first, bare];
    for (let i = 0; i < ROUNDS + WARMUP; i++) {
      const took = [0, 0, 0];
      for (let k = 0; k < 3; k++) {
        const c = (i + k) % 3;
        took[c] = await ms(() => callers[c]!.call('echo', { word: `w${i}` }, { caller: 'bench' }));
      }
      if (i >= WARMUP) {
        withDb.push(took[0]!);
        before.push(took[1]!);
        without.push(took[2]!);
      }
    }
  } finally {
    await memory.stored();
    await store.close();
    await removeDbDir(dir);
  }
  return { withDb, before, without };
}

/**
 * A real fleet: agent `desk` with an Http, a Script, a Subprocess and an Mcp tool (to agent
 * `clerk`), called over MCP by this process as a game loop or a worker would. Each round times,
 * in turn, an MCP `ping` (the transport alone), a direct request to the local service, a bare
 * spawn of the program, a direct MCP call of the clerk's tool, and each of desk's tools; the
 * overhead of a tool is its call minus what it wraps, pair by pair.
 */
export const toolsScenario: Scenario = {
  name: 'tools',
  title: 'What a tool call costs: Http, Script, Subprocess and Mcp through the governed path',
  async run() {
    const service: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
    const port = (service.address() as AddressInfo).port;
    const url = `http://127.0.0.1:${port}/item`;
    const scripts = tempDir('thymos-bench-tool-scripts-');
    const figures: Figure[] = [];
    try {
      await withBenchFleet('tools', domainPkl(port, scripts), ['[log]', 'level = "info"'], async (fleet) => {
        await fleet.start('desk');
        await fleet.start('clerk');
        const desk = await fleet.agent('desk');
        const clerk = await fleet.agent('clerk');
        // The first call of each tool in a fresh agent: the Script module loads, the MCP client side loads and its session opens.
        const first: Record<string, number> = {};
        first.http_read = await ms(() => tool(desk, 'http_read'));
        first.script_read = await ms(() => tool(desk, 'script_read', { word: 'a' }));
        first.program_read = await ms(() => tool(desk, 'program_read'));
        first.ask_clerk = await ms(() => tool(desk, 'ask_clerk', { word: 'a' }));
        const t = {
          ping: [] as number[],
          direct: [] as number[],
          spawn: [] as number[],
          clerk: [] as number[],
          http: [] as number[],
          script: [] as number[],
          program: [] as number[],
          mcp: [] as number[],
        };
        for (let i = 0; i < ROUNDS + WARMUP; i++) {
          const round_ = {
            ping: await ms(() => desk.ping()),
            direct: await ms(async () => (await fetch(url)).json()),
            http: await ms(() => tool(desk, 'http_read')),
            script: await ms(() => tool(desk, 'script_read', { word: `w${i}` })),
            spawn: await ms(bareSpawn),
            program: await ms(() => tool(desk, 'program_read')),
            clerk: await ms(() => tool(clerk, 'echo', { word: `w${i}` })),
            mcp: await ms(() => tool(desk, 'ask_clerk', { word: `w${i}` })),
          };
          if (i < WARMUP) continue;
          for (const [k, v] of Object.entries(round_)) t[k as keyof typeof t].push(v);
        }
        // A Script that never returns is answered at its timeout and its worker ended; the next call waits for the fresh one.
        const respawn = { timeout: [] as number[], next: [] as number[] };
        for (let i = 0; i < RESPAWNS; i++) {
          respawn.timeout.push(await ms(() => toolFails(desk, 'script_spin', 'TOOL_TIMEOUT')));
          respawn.next.push(await ms(() => tool(desk, 'script_read', { word: `r${i}` })));
        }
        const minus = (a: number[], ...bs: number[][]) => a.map((x, i) => x - bs.reduce((s, b) => s + b[i]!, 0));
        const http = minus(t.http, t.ping, t.direct);
        const script = minus(t.script, t.ping);
        const program = minus(t.program, t.ping, t.spawn);
        const mcp = minus(t.mcp, t.clerk);
        figures.push(
          { metric: 'MCP ping to the agent (the transport alone), p50 / p95', value: `${p(t.ping, 0.5)} / ${p(t.ping, 0.95)}`, unit: 'ms' },
          { metric: 'Http: the local service asked directly, p50 / p95', value: `${p(t.direct, 0.5)} / ${p(t.direct, 0.95)}`, unit: 'ms' },
          { metric: 'Http: tool call over MCP, p50 / p95', value: `${p(t.http, 0.5)} / ${p(t.http, 0.95)}`, unit: 'ms' },
          {
            metric: 'Http: overhead above the service and the MCP round trip, p50 / p95',
            value: `${p(http, 0.5)} / ${p(http, 0.95)}`,
            unit: 'ms',
            goal: '≤ 5 ms p95',
          },
          { metric: 'Script: tool call over MCP, p50 / p95', value: `${p(t.script, 0.5)} / ${p(t.script, 0.95)}`, unit: 'ms' },
          {
            metric: 'Script: overhead above the MCP round trip, p50 / p95',
            value: `${p(script, 0.5)} / ${p(script, 0.95)}`,
            unit: 'ms',
            goal: '≤ 2 ms p95',
          },
          {
            metric: `Subprocess: a bare spawn of ${PROGRAM} from this process, p50 / p95`,
            value: `${p(t.spawn, 0.5)} / ${p(t.spawn, 0.95)}`,
            unit: 'ms',
          },
          { metric: 'Subprocess: tool call over MCP, p50 / p95', value: `${p(t.program, 0.5)} / ${p(t.program, 0.95)}`, unit: 'ms' },
          {
            metric: 'Subprocess: overhead above a bare spawn and the MCP round trip, p50 / p95',
            value: `${p(program, 0.5)} / ${p(program, 0.95)}`,
            unit: 'ms',
          },
          {
            metric: "Mcp: the clerk's tool called directly over MCP, p50 / p95",
            value: `${p(t.clerk, 0.5)} / ${p(t.clerk, 0.95)}`,
            unit: 'ms',
          },
          {
            metric: "Mcp: desk's tool that calls the clerk's, over MCP, p50 / p95",
            value: `${p(t.mcp, 0.5)} / ${p(t.mcp, 0.95)}`,
            unit: 'ms',
          },
          { metric: 'Mcp: overhead above calling the clerk directly, p50 / p95', value: `${p(mcp, 0.5)} / ${p(mcp, 0.95)}`, unit: 'ms' },
          { metric: 'Script: a synchronous loop answered TOOL_TIMEOUT (timeoutMs = 50), p50', value: p(respawn.timeout, 0.5), unit: 'ms' },
          {
            metric: 'Script: the next call of its module, while a fresh worker starts, p50 / max',
            value: `${p(respawn.next, 0.5)} / ${round(Math.max(...respawn.next), 2)}`,
            unit: 'ms',
          },
          {
            metric: 'first call in a fresh agent: Http / Script / Subprocess / Mcp',
            value: `${round(first.http_read!, 1)} / ${round(first.script_read!, 1)} / ${round(first.program_read!, 1)} / ${round(first.ask_clerk!, 1)}`,
            unit: 'ms',
          },
        );
      });
      const rec = await recordingShare();
      const share = (quantile(rec.before, 0.5) - quantile(rec.without, 0.5)) / quantile(rec.before, 0.5);
      figures.push(
        {
          metric: 'governed path in process, Script that returns at once, with the agent database, p50 / p95',
          value: `${p(rec.withDb, 0.5)} / ${p(rec.withDb, 0.95)}`,
          unit: 'ms',
        },
        {
          metric: 'governed path in process, same, its record stored before it answers (record_reads_within_ms = 0), p50 / p95',
          value: `${p(rec.before, 0.5)} / ${p(rec.before, 0.95)}`,
          unit: 'ms',
        },
        {
          metric: 'governed path in process, same, with a store that keeps nothing, p50 / p95',
          value: `${p(rec.without, 0.5)} / ${p(rec.without, 0.95)}`,
          unit: 'ms',
        },
        {
          metric: 'share of a read-only call spent recording it when its record is stored before it answers, p50',
          value: round(share * 100, 0),
          unit: '%',
        },
      );
    } finally {
      await new Promise((r) => service.close(r));
    }
    return {
      figures,
      notes: [
        `${ROUNDS} rounds after ${WARMUP} of warm-up, one client, read-only tools (nothing waits for approval). Each round times an MCP ping, a direct request to the local service, desk's Http tool, its Script tool, a bare spawn of ${PROGRAM}, its Subprocess tool, the clerk's Script tool called directly, and desk's Mcp tool that calls it; overheads are taken pair by pair within a round.`,
        'An overhead is what Thymos adds: the governed path (validation, the record (written behind for these read-only tools; a call with side effects is written as running before it starts and as it ends, before it answers), the tool_call memory, the log line), the executor and the agent side of MCP. The Mcp overhead includes asking the supervisor where the clerk is (one NATS request per call) and a second MCP hop.',
        'The first-call figures are for a fresh agent whose caches are cold: the MCP client side is loaded and its session to the clerk opened. A Script module is imported when the agent starts, in a worker thread kept warm for its calls.',
        `A Script that runs past its timeout (here a synchronous loop, ${RESPAWNS} times) is answered TOOL_TIMEOUT at once and its worker is ended a second later; a fresh worker is started in its place, and the next call of the module waits for it: that wait is the cost of a stopped Script.`,
        'The in-process figures are measured on the Script tool, so no transport is in them: the agent database is an embedded SurrealDB, and one write takes most of a path that waits for it. By default (`[tools] record_reads_within_ms = 1000`) a read-only call answers first; its record and its memory are written within a second, in one write with whatever else waits, which lands during later calls.',
        `This process (the caller) warns of more than 1,500 abort listeners on one AbortSignal after about 1,500 tool calls on one session to an agent: undici adds one per request to the MCP transport's shared signal and removes it when the request is garbage-collected. It is not a leak: over 4,000 calls with forced collections the count falls back to 2 and the heap stays flat.`,
      ],
    };
  },
};
