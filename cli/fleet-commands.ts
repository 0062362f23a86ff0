import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { connect, type Fleet } from '../client/fleet-client.js';
import { fleetPaths } from '../shared/config/index.js';
import { ErrorCode, ExitCode, exitCodeFor, ThymosError, type WireError, WireErrorSchema } from '../shared/errors/index.js';
import { type FleetStatus, parseReconcileContextText, type ProgressMessage, type ReconcileReport } from '../shared/protocol/index.js';
import { downFleet, upFleet } from '../supervisor/launch/fleet-launcher.js';
import { commandNamed, suggest, usageLine } from './command-book.js';
import type { CommandSpec } from './command-spec.js';
import { parseFleetArgs, parseId } from './fleet-args.js';
import { formatAge, formatBytes, formatPlacement, renderLease, renderTable } from './table.js';

const out = (text: string) => process.stdout.write(`${text}\n`);
const err = (text: string) => process.stderr.write(`${text}\n`);
/** A command's entry in the book (every command this file runs has one). */
const book = (name: string): CommandSpec => commandNamed(name)!;
const progress = (p: ProgressMessage) => err(`[${p.done}/${p.total}] ${p.id}: ${p.step} ${p.ok ? 'done' : 'FAILED'} (${p.ms} ms)`);

async function withFleet<T>(config: Parameters<typeof connect>[0], run: (fleet: Fleet) => Promise<T>): Promise<T> {
  const fleet = await connect(config);
  try {
    return await run(fleet);
  } finally {
    await fleet.close();
  }
}

/** `thymos up [--config FILE] [--json]` */
export async function runUpCommand(argv: string[]): Promise<number> {
  const args = parseFleetArgs(argv, book('up'));
  const strict = args.values.strict === true;
  const result = await upFleet(args.config, {
    onStep: args.json ? undefined : err,
    onWarning: (w) => err(`thymos: warning: ${w.message}`),
    strict,
  });
  if (args.json) out(JSON.stringify(result));
  else if (result.alreadyRunning)
    err(`thymos: the fleet is already running (supervisor pid ${result.supervisorPid}, NATS ${result.natsUrl})`);
  else out(`thymos: fleet up (supervisor pid ${result.supervisorPid}, NATS ${result.natsUrl})`);
  // Already running is a conflict, not a start: a script that runs `up` learns it started nothing.
  return result.alreadyRunning ? ExitCode.CONFLICT : ExitCode.OK;
}

/** `thymos down [--config FILE] [--json]` */
export async function runDownCommand(argv: string[]): Promise<number> {
  const args = parseFleetArgs(argv, book('down'));
  const result = await downFleet(args.config, { onStep: args.json ? undefined : err, onProgress: progress });
  if (args.json) out(JSON.stringify(result));
  else if (!result.wasRunning) out('thymos: the fleet is not running');
  else out(`thymos: fleet down${result.report ? ` (${result.report.stopped.length} agent(s) stopped with a snapshot)` : ''}`);
  return result.report && result.report.failed.length > 0 ? ExitCode.FAILURE : ExitCode.OK;
}

/** `thymos status [--config FILE] [--json]` */
export async function runStatusCommand(argv: string[]): Promise<number> {
  const args = parseFleetArgs(argv, book('status'));
  const status = await withFleet(args.config, (f) => f.status());
  out(args.json ? JSON.stringify(status, null, 2) : renderStatus(status));
  return ExitCode.OK;
}

export function renderStatus(s: FleetStatus): string {
  // Under placement by lease, which host holds each agent.
  const leased = Boolean(s.supervisor.lease);
  const table = renderTable(
    ['ID', 'STATE', 'MODE', 'PID', 'PORT', 'SCORE', 'SINCE', 'RSS', ...(leased ? ['HOST'] : []), 'NOTE'],
    s.agents.map((a) => [
      a.id,
      a.state,
      a.mode,
      a.pid,
      a.port,
      a.score === null ? null : `${a.score.toFixed(2)} ${a.source ?? ''}`.trim(),
      formatAge(a.since),
      formatBytes(a.rss_bytes),
      ...(leased ? [formatPlacement(a.placement)] : []),
      [
        a.pinned ? `pinned ${a.pinned}` : '',
        a.restarts ? `${a.restarts} restart(s)` : '',
        a.last_error ? `last error ${a.last_error.code}` : '',
      ]
        .filter(Boolean)
        .join(', '),
    ]),
  );
  const c = s.counts;
  const p = s.supervisor.pool;
  const pool = p ? ` · pool ${p.ready}/${p.size} ready, ${p.hits} warm and ${p.misses} cold wake(s)` : '';
  const lease = leased ? `\n${renderLease(s.supervisor.lease)}` : '';
  return `${table}\n\n${c.active} active, ${c.listening} listening, ${c.dormant} dormant, ${c.archived} archived · supervisor pid ${s.supervisor.pid} · metrics ${s.supervisor.metrics_url}${pool}${lease}`;
}

/** `thymos reconcile --context FILE|- [--dry-run] [--config FILE] [--json]` */
export async function runReconcileCommand(argv: string[]): Promise<number> {
  const spec = book('reconcile');
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec);
  const source = args.values.context as string | undefined;
  if (!source) throw new ThymosError(ErrorCode.USAGE, `--context is required (a JSON file, or - for stdin)\nusage: ${usage}`);
  let text: string;
  try {
    text = source === '-' ? readFileSync(0, 'utf8') : readFileSync(source, 'utf8');
  } catch (e) {
    throw new ThymosError(ErrorCode.USAGE, `--context ${source}: cannot read: ${(e as Error).message}`, { cause: e });
  }
  const context = parseReconcileContextText(text, source === '-' ? 'stdin' : source);
  const report = await withFleet(args.config, (f) =>
    f.reconcile(context, { dryRun: args.values['dry-run'] === true, strict: args.values.strict === true, onProgress: progress }),
  );
  for (const w of report.warnings ?? []) err(`thymos: warning: ${w}`);
  out(args.json ? JSON.stringify(report, null, 2) : renderReport(report));
  return report.failed.length > 0 ? ExitCode.FAILURE : ExitCode.OK;
}

export function renderReport(r: ReconcileReport): string {
  const lines: string[] = [];
  // Names, not counts: which agents moved is what a reader of the report wants to know.
  for (const key of ['started', 'stopped', 'upgraded', 'downgraded', 'archived', 'restored'] as const) {
    if (r[key].length) lines.push(`${key.padEnd(10)} ${r[key].join(', ')}`);
  }
  if (r.unchanged.length) lines.push(`${'unchanged'.padEnd(10)} ${r.unchanged.join(', ')}`);
  for (const f of r.failed) lines.push(`FAILED     ${f.id}: ${f.code}: ${f.message}`);
  if (r.pending?.length) lines.push(`${'stopping'.padEnd(10)} ${r.pending.join(', ')} (still moving down when this answered)`);
  // What an earlier reconcile that answered after its wakes left running did since.
  const s = r.settled;
  if (s) {
    for (const key of ['stopped', 'downgraded', 'archived'] as const)
      if (s[key].length) lines.push(`since the last answer, ${key}: ${s[key].join(', ')}`);
    for (const f of s.failed) lines.push(`since the last answer, FAILED ${f.id}: ${f.code}: ${f.message}`);
  }
  lines.push(`${r.dry_run ? 'dry run: nothing was changed; ' : ''}${r.duration_ms} ms`);
  return lines.join('\n');
}

/** `thymos start|stop|archive|restore ID` */
export async function runAgentOperationCommand(op: 'start' | 'stop' | 'archive' | 'restore', argv: string[]): Promise<number> {
  const spec = book(op);
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 1, max: 1 });
  const id = parseId(args.positionals[0]!, usage);
  const mode = args.values.mode as string | undefined;
  if (mode !== undefined && mode !== 'active' && mode !== 'passive')
    throw new ThymosError(ErrorCode.USAGE, `--mode: expected active or passive, got ${JSON.stringify(mode)}\nusage: ${usage}`);
  const report = await withFleet(args.config, (f) =>
    op === 'start'
      ? f.start(id, { mode: mode as 'active' | 'passive' | undefined, onProgress: progress })
      : f[op](id, { onProgress: progress }),
  );
  out(args.json ? JSON.stringify(report, null, 2) : renderReport(report));
  return report.failed.length > 0 ? ExitCode.FAILURE : ExitCode.OK;
}

/** `thymos logs ID|supervisor|nats-server|--all [--follow] [--lines N] [--json]` */
export async function runLogsCommand(argv: string[]): Promise<number> {
  const spec = book('logs');
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 0, max: 1 });
  const all = args.values.all === true;
  const name = args.positionals[0];
  if (all === (name !== undefined))
    throw new ThymosError(
      ErrorCode.USAGE,
      `expected one process (an agent id, supervisor or nats-server) or --all, not ${all ? 'both' : 'neither'}\nusage: ${usage}`,
    );
  if (name !== undefined && name !== 'supervisor' && name !== 'nats-server') parseId(name, usage);
  const lines = args.values.lines === undefined ? 50 : Number(args.values.lines);
  if (!Number.isInteger(lines) || lines < 0)
    throw new ThymosError(ErrorCode.USAGE, `--lines: expected a whole number, got ${JSON.stringify(args.values.lines)}\nusage: ${usage}`);
  // pino-pretty is loaded only here, not by every fleet command.
  const { lineFormatter, logFiles, showLogs } = await import('./log-view.js');
  const dir = fleetPaths(args.config.dataPath).logs;
  const file = name === undefined ? undefined : join(dir, `${name}.log`);
  if (file && !existsSync(file))
    throw new ThymosError(ErrorCode.AGENT_NOT_FOUND, `no log for ${name}: expected ${file} (has it ever run?)`);
  if (!file && logFiles(dir).size === 0) throw new ThymosError(ErrorCode.AGENT_NOT_FOUND, `no logs in ${dir} (has the fleet ever run?)`);
  const format = lineFormatter({ json: args.json, colour: process.stdout.isTTY === true && !process.env.NO_COLOR, label: all });
  await showLogs(
    () => (file ? new Map([[name!, file]]) : logFiles(dir)),
    lines,
    args.values.follow === true,
    format,
    (text) => process.stdout.write(text),
  );
  return ExitCode.OK;
}

/** `thymos call ID TOOL [JSON]`: one MCP tool call on a running agent. */
export async function runCallCommand(argv: string[]): Promise<number> {
  const spec = book('call');
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 2, max: 3 });
  const [rawId, tool, json] = args.positionals as [string, string, string | undefined];
  const id = parseId(rawId, usage);
  let toolArgs: Record<string, unknown> = {};
  if (json !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (e) {
      throw new ThymosError(
        ErrorCode.USAGE,
        `tool arguments: expected a JSON object, got ${JSON.stringify(json.slice(0, 60))}: ${(e as Error).message}\nusage: ${usage}`,
      );
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new ThymosError(ErrorCode.USAGE, `tool arguments: expected a JSON object\nusage: ${usage}`);
    toolArgs = parsed as Record<string, unknown>;
  }
  // A reply is printed as the agent's model writes it; the rest of the answer follows as before.
  let streamed = false;
  const onprogress = ({ message }: { message?: string | undefined }) => {
    if (message === undefined) return;
    streamed = true;
    process.stdout.write(message);
  };
  const { result, tools } = await withFleet(args.config, async (f) => {
    const client = await f.agent(id);
    const answer = await client.callTool(
      { name: tool, arguments: toolArgs },
      undefined,
      tool === `talk_to_${id}` && !args.json ? { onprogress, resetTimeoutOnProgress: true } : {},
    );
    // A tool the agent does not have: name the ones it has, nearest first.
    const failure = toolErrorOf(answer);
    const unknownTool = failure?.code === ErrorCode.NOT_FOUND && failure.location?.path === 'name';
    return { result: answer, tools: unknownTool ? (await client.listTools()).tools.map((t) => t.name) : undefined };
  });
  if (tools) {
    const near = suggest(tool, tools);
    throw new ThymosError(
      ErrorCode.NOT_FOUND,
      `${id} has no tool ${JSON.stringify(tool)}${near ? `; did you mean ${near}?` : ''}\nits tools: ${tools.join(', ')} (thymos tools ${id} says what each takes)`,
    );
  }
  if (args.json) out(JSON.stringify(result, null, 2));
  const failure = result.isError ? (toolErrorOf(result) ?? { code: ErrorCode.INTERNAL }) : undefined;
  const texts = ((result.content as Array<{ type: string; text?: string }>) ?? []).map((c) =>
    c.type === 'text' ? c.text! : JSON.stringify(c),
  );
  if (streamed) process.stdout.write('\n');
  if (!args.json && !(streamed && !failure))
    (failure ? err : out)(failure ? texts.map((t) => `thymos: ${t}`).join('\n') : texts.join('\n'));
  return failure ? exitCodeFor(failure.code as ErrorCode) : ExitCode.OK;
}

/** The coded error an agent's tool result carries in `_meta["thymos/error"]`, if any. */
function toolErrorOf(result: { isError?: unknown; _meta?: Record<string, unknown> | undefined }): WireError | undefined {
  if (result.isError !== true) return undefined;
  const parsed = WireErrorSchema.safeParse(result._meta?.['thymos/error']);
  return parsed.success ? parsed.data : undefined;
}

/** `thymos tools ID`: a running agent's tools, what each does and what it takes. */
export async function runToolsCommand(argv: string[]): Promise<number> {
  const spec = book('tools');
  const args = parseFleetArgs(argv, spec, { min: 1, max: 1 });
  const id = parseId(args.positionals[0]!, usageLine(spec));
  const { tools } = await withFleet(args.config, async (f) => (await f.agent(id)).listTools());
  if (args.json) {
    out(JSON.stringify(tools, null, 2));
    return ExitCode.OK;
  }
  const argsOf = (t: (typeof tools)[number]) => {
    const required = new Set(t.inputSchema.required ?? []);
    return Object.keys(t.inputSchema.properties ?? {})
      .map((name) => (required.has(name) ? `${name}*` : name))
      .join(', ');
  };
  const firstSentence = (text: string | undefined) => (text ?? '').split(/(?<=\.)\s/)[0]!.replace(/\s+/g, ' ');
  out(
    renderTable(
      ['TOOL', 'ARGUMENTS (* required)', 'WHAT IT DOES'],
      tools.map((t) => [t.name, argsOf(t) || '-', firstSentence(t.description)]),
    ),
  );
  return ExitCode.OK;
}

/** `thymos url ID`: the MCP address of a running agent, for an MCP client. */
export async function runUrlCommand(argv: string[]): Promise<number> {
  const spec = book('url');
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 1, max: 1 });
  const id = parseId(args.positionals[0]!, usage);
  const found = await withFleet(args.config, (f) => f.agentUrl(id));
  if (args.values.header === true) {
    // From the supervisor over NATS, on any host; printed as the header alone, so "$(thymos url ID --header)" is one argument.
    const authorization = await withFleet(args.config, (f) => f.agentAuthorization(id));
    if (!authorization)
      throw new ThymosError(
        ErrorCode.INVALID_INPUT,
        `${id}: no Authorization header to print: it asks for none ([mcp] require_token = false)`,
      );
    out(args.json ? JSON.stringify({ id, header: `Authorization: ${authorization}` }) : `Authorization: ${authorization}`);
    return ExitCode.OK;
  }
  out(args.json ? JSON.stringify({ id, ...found }) : found.url);
  return ExitCode.OK;
}

/** `thymos history ID [--lines N]` */
export async function runHistoryCommand(argv: string[]): Promise<number> {
  const spec = book('history');
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 1, max: 1 });
  const id = parseId(args.positionals[0]!, usage);
  const limit = args.values.lines === undefined ? 20 : Number(args.values.lines);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new ThymosError(ErrorCode.USAGE, `--lines: expected 1 to 1000, got ${JSON.stringify(args.values.lines)}`);
  const history = await withFleet(args.config, (f) => f.history(id, limit));
  out(
    args.json
      ? JSON.stringify(history, null, 2)
      : renderTable(
          ['AT', 'FROM', 'TO', 'SCORE', 'REASON', 'RESULT'],
          history.map((t) => [t.at, t.from, t.to, t.score?.toFixed(2), t.reason, t.ok ? 'ok' : t.error]),
        ),
  );
  return ExitCode.OK;
}

/** `thymos publish TYPE ['{"summary":"…"}'] [--tags a,b] [--location L] [--mentions a,b] [--source S] [--id ID]` */
export async function runPublishCommand(argv: string[]): Promise<number> {
  const spec = book('publish');
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 1, max: 2 });
  const [type, json] = args.positionals as [string, string | undefined];
  let payload: unknown = {};
  if (json !== undefined) {
    try {
      payload = JSON.parse(json);
    } catch (e) {
      throw new ThymosError(
        ErrorCode.USAGE,
        `payload: expected a JSON object, got ${JSON.stringify(json.slice(0, 60))}: ${(e as Error).message}\nusage: ${usage}`,
      );
    }
  }
  const list = (v: unknown) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined;
  const v = args.values;
  const input = {
    type,
    payload,
    ...(v.tags !== undefined ? { tags: list(v.tags) } : {}),
    ...(v.mentions !== undefined ? { mentions: list(v.mentions) } : {}),
    ...(typeof v.location === 'string' ? { location: v.location } : {}),
    ...(typeof v.source === 'string' ? { source: v.source } : {}),
    ...(typeof v.id === 'string' ? { id: v.id } : {}),
  };
  const result = await withFleet(args.config, (f) => f.publish(input as Parameters<Fleet['publish']>[0]));
  out(
    args.json
      ? JSON.stringify(result)
      : `published ${type} as ${result.id} (stream sequence ${result.seq}${result.duplicate ? ', a duplicate: dropped' : ''})`,
  );
  return ExitCode.OK;
}
