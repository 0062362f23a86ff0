import { setTimeout as sleep } from 'node:timers/promises';

import { fillUrl, type HttpExecutor, parseUrlTemplate, type Tool, UrlInputError } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ExecutorContext } from './executor-context.js';

const MAX_REDIRECTS = 5;

/**
 * Runs an Http tool: the URL from its template (origin fixed, input percent-encoded into path
 * segments and query values), fixed headers and secrets from the environment, the body as the
 * JSON of the named input fields. A redirect is followed only within the same origin; a
 * non-2xx answer is TOOL_FAILED with its status (429 is TOOL_RATE_LIMITED); a 429 or 503 with
 * `Retry-After` is tried once more for a read-only tool or one with an `idempotencyKey`, when
 * the wait fits in the timeout; a body larger than the tool's limit is TOOL_OUTPUT_TOO_LARGE. A
 * JSON answer is parsed; any other is text.
 */
export async function runHttp(tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
  const exec = tool.executor as HttpExecutor;
  const template = parseUrlTemplate(exec.url);
  let url: URL;
  try {
    url = fillUrl(template, input);
  } catch (err) {
    if (err instanceof UrlInputError)
      throw new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${ctx.tool}: ${err.message}`, {
        location: { path: `arguments.${err.field}` },
      });
    throw err;
  }
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5' };
  for (const [name, value] of Object.entries(exec.headers))
    headers[name] = typeof value === 'string' ? value : `${value.prefix}${ctx.secret(value.env)}`;
  if (tool.sideEffect !== 'read_only') headers['idempotency-key'] = ctx.idempotencyKey;
  let body: string | undefined;
  if (exec.body) {
    body = JSON.stringify(Object.fromEntries(exec.body.filter((f) => input[f] !== undefined).map((f) => [f, input[f]])));
    headers['content-type'] = 'application/json';
  }
  // A 429 or 503 that says when to come back is tried once more, where repeating it is safe and the wait fits in the timeout.
  const repeatable = tool.sideEffect === 'read_only' || tool.idempotencyKey != null;
  for (let attempt = 0; ; attempt++) {
    const answer = await exchange(tool, template.origin, { url, method: exec.method, headers, body }, ctx);
    if (answer.ok) return answer.value;
    const wait = answer.status === 429 || answer.status === 503 ? retryAfterMs(answer.retryAfter) : undefined;
    if (attempt === 0 && repeatable && wait !== undefined && Date.now() + wait < ctx.deadline) {
      try {
        await sleep(wait, undefined, { signal: ctx.signal });
      } catch {
        throw ctx.signal.reason;
      }
      continue;
    }
    const details = { status: answer.status, ...(wait !== undefined ? { retry_after_ms: wait } : {}) };
    const said = `${ctx.tool}: the service answered ${answer.status} ${answer.statusText}${answer.text ? `: ${answer.text.slice(0, 300)}` : ''}`;
    if (answer.status === 429)
      throw new ThymosError(ErrorCode.TOOL_RATE_LIMITED, `${said}${attempt > 0 ? ' (after one retry)' : ''}`, { details });
    throw new ThymosError(ErrorCode.TOOL_FAILED, `${said}${attempt > 0 ? ' (after one retry)' : ''}`, { details });
  }
}

/** `Retry-After` in ms: delay-seconds, or an HTTP date (`Wed, 21 Oct 2026 07:28:00 GMT`); undefined when absent or anything else. */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\s*\d{1,9}\s*$/.test(value)) return Number(value) * 1000;
  if (!/^\s*[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT\s*$/.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

type Answer = { ok: true; value: unknown } | { ok: false; status: number; statusText: string; text: string; retryAfter: string | null };

/** One request, following redirects within the origin; a 2xx answer parsed (JSON, else text). */
async function exchange(
  tool: Tool,
  origin: string,
  req: { url: URL; method: string; headers: Record<string, string>; body: string | undefined },
  ctx: ExecutorContext,
): Promise<Answer> {
  let { url, method, body } = req;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetch(url, { method, headers: req.headers, body, redirect: 'manual', signal: ctx.signal });
    } catch (err) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw new ThymosError(
        ErrorCode.TOOL_FAILED,
        `${ctx.tool}: ${method} ${url.origin}${url.pathname} failed: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
      );
    }
    if (res.status >= 300 && res.status < 400 && res.headers.has('location')) {
      await res.body?.cancel();
      const next = new URL(res.headers.get('location')!, url);
      if (next.origin !== origin)
        throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: the service redirected to another origin (${next.origin}); refused`, {
          details: { status: res.status },
        });
      if (hop >= MAX_REDIRECTS)
        throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: more than ${MAX_REDIRECTS} redirects`, {
          details: { status: res.status },
        });
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      url = next;
      continue;
    }
    const text = ctx.redact(await readCapped(res, tool.outputLimitBytes, ctx.tool));
    if (!res.ok) return { ok: false, status: res.status, statusText: res.statusText, text, retryAfter: res.headers.get('retry-after') };
    if (/\bjson\b/i.test(res.headers.get('content-type') ?? '')) {
      try {
        return { ok: true, value: JSON.parse(text) as unknown };
      } catch {
        throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: the service said JSON but sent something else`, {
          details: { status: res.status },
        });
      }
    }
    return { ok: true, value: text };
  }
}

/** The body as text, refused once it passes `limit` bytes (the rest is not read). */
async function readCapped(res: Response, limit: number, tool: string): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new ThymosError(ErrorCode.TOOL_OUTPUT_TOO_LARGE, `${tool}: the answer is over ${limit} bytes (outputLimitBytes)`, {
        details: { limit },
      });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
