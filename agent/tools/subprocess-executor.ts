import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

import { argField, type SubprocessExecutor, type Tool } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ExecutorContext } from './executor-context.js';

/** How much of the end of standard error a failed call quotes and keeps. */
const STDERR_TAIL_BYTES = 4096;
/** Between SIGTERM and SIGKILL for a program stopped by a timeout or a cancel. */
const KILL_GRACE_MS = 2000;

/**
 * The argument vector of a Subprocess call: literal arguments as declared, each `{field}` or
 * `Arg` a whole argument from the input (a list field one argument per value, an absent
 * optional field none; an `Arg`'s `option` before each value, and not at all without one). A value that starts with `-` is refused unless its `Arg` allows it —
 * the program would read it as an option — and so is one holding NUL. Checked before a call is
 * saved or waits for approval, as well as when it runs.
 */
export function subprocessArgs(tool: string, exec: SubprocessExecutor, input: Record<string, unknown>): string[] {
  const argv: string[] = [];
  for (const arg of exec.args) {
    const filled = argField(arg);
    if (!filled) {
      argv.push(arg as string);
      continue;
    }
    const value = input[filled.field];
    if (value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? (value as unknown[]) : [value]) {
      const text = typeof v === 'string' ? v : JSON.stringify(v);
      const refuse = (why: string) =>
        new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${tool}: ${filled.field}: ${why}`, {
          location: { path: `arguments.${filled.field}` },
        });
      if (text.startsWith('-') && !filled.allowDash)
        throw refuse(
          `${JSON.stringify(text.slice(0, 40))} starts with "-", which the program would read as an option; the tool does not allow it for this argument (Arg { allowDash = true })`,
        );
      if (text.includes('\0')) throw refuse('a program argument cannot hold a NUL character');
      if (filled.option) argv.push(filled.option);
      argv.push(text);
    }
  }
  return argv;
}

/** The program to start: a path as declared, or a bare name found on the agent's own PATH (not the program's, which may have none). */
function resolveCommand(tool: string, command: string, path: string | undefined): string {
  if (command.includes('/')) return command;
  for (const dir of (path ?? '').split(delimiter)) {
    // A relative entry would mean one folder here and another in the program's cwd: skipped.
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  throw new ThymosError(ErrorCode.TOOL_FAILED, `${tool}: no program ${JSON.stringify(command)} on the agent's PATH (${path ?? 'unset'})`);
}

/** After the program exits, how long a grandchild holding its output open may keep it so. */
const PIPE_GRACE_MS = 1000;

/** The process groups of programs still running: killed if the agent exits before they do. */
const LIVE_GROUPS = new Set<number>();
let killAtExit = false;

function track(pid: number): void {
  LIVE_GROUPS.add(pid);
  if (killAtExit) return;
  killAtExit = true;
  process.on('exit', () => {
    for (const group of LIVE_GROUPS) killGroup(group, 'SIGKILL');
  });
}

/** Kills a process group, if anything is left of it. */
function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}

/** How a program ended: its output, the end of its standard error (and whether its start was cut), its exit. */
interface ProgramEnd {
  stdout: Buffer;
  stderr: Buffer;
  stderrCut: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Collects what a program writes: its standard output up to `limit` bytes (past it, `over` is
 * called and the rest is dropped) and the last of its standard error; returns how to read them.
 */
function collectOutput(child: ChildProcess, limit: number, over: () => void): () => Omit<ProgramEnd, 'code' | 'signal'> {
  const out: Buffer[] = [];
  let outBytes = 0;
  let err = Buffer.alloc(0);
  let errCut = false;
  child.stdout!.on('data', (chunk: Buffer) => {
    outBytes += chunk.byteLength;
    if (outBytes > limit) return over();
    out.push(chunk);
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    err = Buffer.concat([err, chunk]);
    if (err.byteLength > STDERR_TAIL_BYTES * 2) {
      err = err.subarray(err.byteLength - STDERR_TAIL_BYTES);
      errCut = true;
    }
  });
  return () => ({ stdout: Buffer.concat(out), stderr: err, stderrCut: errCut });
}

/** Starts the program as the leader of a process group and waits until it has ended and its output closed (see `runSubprocess`). */
function runProgram(
  tool: Tool,
  ctx: ExecutorContext,
  command: string,
  argv: string[],
  env: Record<string, string>,
  stdin: string | undefined,
): Promise<ProgramEnd> {
  const exec = tool.executor as SubprocessExecutor;
  return new Promise<ProgramEnd>((resolve, reject) => {
    const child = spawn(command, argv, {
      cwd: exec.cwd ?? undefined,
      env,
      detached: true,
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let failure: ThymosError | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let pipeTimer: NodeJS.Timeout | undefined;
    if (child.pid !== undefined) track(child.pid);
    const stop = (why: ThymosError | undefined) => {
      failure ??= why;
      if (child.pid === undefined || exit) return;
      killGroup(child.pid, 'SIGTERM');
      killTimer ??= setTimeout(() => killGroup(child.pid!, 'SIGKILL'), KILL_GRACE_MS);
    };
    const onAbort = () => stop(ctx.signal.reason as ThymosError);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    const output = collectOutput(child, tool.outputLimitBytes, () => {
      if (!failure)
        stop(
          new ThymosError(
            ErrorCode.TOOL_OUTPUT_TOO_LARGE,
            `${ctx.tool}: the program wrote over ${tool.outputLimitBytes} bytes (outputLimitBytes)`,
            {
              details: { limit: tool.outputLimitBytes },
            },
          ),
        );
    });
    if (stdin !== undefined) {
      // A program that does not read its input closes the pipe early: that is not the call's failure.
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(stdin);
    }
    child.on('error', (e: NodeJS.ErrnoException) => {
      ctx.signal.removeEventListener('abort', onAbort);
      reject(new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: cannot start ${command}: ${e.code ?? e.message}`));
    });
    child.on('exit', (c, s) => {
      exit = { code: c, signal: s };
      clearTimeout(killTimer);
      if (child.pid === undefined) return;
      // What the program left behind in its group (a daemon, a stuck grandchild) goes with it, and its pipes close.
      killGroup(child.pid, 'SIGKILL');
      LIVE_GROUPS.delete(child.pid);
      // A grandchild in a session of its own escapes the group; if it holds the output open, it is not waited for.
      pipeTimer = setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
      }, PIPE_GRACE_MS);
    });
    child.on('close', (c, s) => {
      clearTimeout(pipeTimer);
      ctx.signal.removeEventListener('abort', onAbort);
      if (failure) return reject(failure);
      resolve({ ...output(), ...(exit ?? { code: c, signal: s }) });
    });
  });
}

/**
 * Runs a Subprocess tool: the program with its argument vector (no shell), in its fixed folder,
 * with only the variables it names, the secrets it sets and the call's own (THYMOS_IDEMPOTENCY_KEY,
 * THYMOS_CALL_ID, THYMOS_TOOL, THYMOS_AGENT). It leads a process group of its own: at the
 * timeout, a cancel or the agent stopping the group gets SIGTERM, then SIGKILL 2 s later; once
 * the program exits, whatever it left running in the group is killed. Standard output over
 * `outputLimitBytes` is TOOL_OUTPUT_TOO_LARGE (and the group is killed); a non-zero exit is
 * TOOL_FAILED with the exit code and the end of standard error, secrets removed.
 */
export async function runSubprocess(tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
  const exec = tool.executor as SubprocessExecutor;
  const argv = subprocessArgs(ctx.tool, exec, input);
  const env: Record<string, string> = {};
  for (const name of exec.env) {
    const value = ctx.env(name);
    if (value !== undefined) env[name] = value;
  }
  for (const [name, secret] of Object.entries(exec.secrets)) env[name] = `${secret.prefix}${ctx.secret(secret.env)}`;
  Object.assign(env, {
    THYMOS_IDEMPOTENCY_KEY: ctx.idempotencyKey,
    THYMOS_CALL_ID: ctx.callId,
    THYMOS_TOOL: ctx.tool,
    THYMOS_AGENT: ctx.agent,
  });
  const command = resolveCommand(ctx.tool, exec.command, ctx.env('PATH'));
  const stdin = exec.stdin
    ? JSON.stringify(Object.fromEntries(exec.stdin.filter((f) => input[f] !== undefined).map((f) => [f, input[f]])))
    : undefined;
  if (ctx.signal.aborted) throw ctx.signal.reason;

  const { stdout, stderr, stderrCut, code, signal } = await runProgram(tool, ctx, command, argv, env, stdin);

  if (code !== 0) {
    // Secrets are taken out of all that was kept before it is cut; when the start of what was kept was cut off, its first line (perhaps part of a secret) goes too.
    let kept = ctx.redact(stderr.toString('utf8'));
    if (stderrCut) kept = kept.includes('\n') ? kept.slice(kept.indexOf('\n') + 1) : kept.slice(Math.min(kept.length, 1024));
    const tail = kept.trim().slice(-600);
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: ${exec.command} ${how}${tail ? `: ${tail}` : ''}`, {
      details: { exit_code: code, signal, stderr: tail },
    });
  }
  const text = stdout.toString('utf8');
  if (!tool.output) return text.endsWith('\n') ? text.slice(0, -1) : text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ThymosError(
      ErrorCode.TOOL_OUTPUT_INVALID,
      `${ctx.tool}: the tool declares output, so the program writes one JSON object on standard output; it wrote ${JSON.stringify(ctx.redact(text).slice(0, 200))}`,
    );
  }
}
