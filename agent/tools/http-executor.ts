import { fillUrl, parseUrlTemplate, UrlInputError } from '../../shared/domain/http-url.js';
import type { HttpExecutor, Tool } from '../../shared/domain/tool-schema.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import type { ExecutorContext } from './executor-context.js';

const MAX_REDIRECTS = 5;

/**
 * Runs an Http tool: the URL from its template (origin fixed, input percent-encoded into path
 * segments and query values), fixed headers and secrets from the environment, the body as the
 * JSON of the named input fields. A redirect is followed only within the same origin; a
 * non-2xx answer is TOOL_FAILED with its status; a body larger than the tool's limit is
 * TOOL_OUTPUT_TOO_LARGE. A JSON answer is parsed; any other is text.
 */
export async function runHttp(tool: Tool, input: Record<string, unknown>, ctx: ExecutorContext): Promise<unknown> {
  const exec = tool.executor as HttpExecutor;
  const template = parseUrlTemplate(exec.url);
  let url: URL;
  try {
    url = fillUrl(template, input);
  } catch (err) {
    if (err instanceof UrlInputError) throw new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${ctx.tool}: ${err.message}`, { location: { path: `arguments.${err.field}` } });
    throw err;
  }
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5' };
  for (const [name, value] of Object.entries(exec.headers)) headers[name] = typeof value === 'string' ? value : `${value.prefix}${ctx.secret(value.env)}`;
  if (tool.sideEffect !== 'read_only') headers['idempotency-key'] = ctx.idempotencyKey;
  let body: string | undefined;
  if (exec.body) {
    body = JSON.stringify(Object.fromEntries(exec.body.filter((f) => input[f] !== undefined).map((f) => [f, input[f]])));
    headers['content-type'] = 'application/json';
  }
  let method: string = exec.method;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body, redirect: 'manual', signal: ctx.signal });
    } catch (err) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: ${method} ${url.origin}${url.pathname} failed: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.has('location')) {
      await res.body?.cancel();
      const next = new URL(res.headers.get('location')!, url);
      if (next.origin !== template.origin) throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: the service redirected to another origin (${next.origin}); refused`, { details: { status: res.status } });
      if (hop >= MAX_REDIRECTS) throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: more than ${MAX_REDIRECTS} redirects`, { details: { status: res.status } });
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      url = next;
      continue;
    }
    const text = ctx.redact(await readCapped(res, tool.outputLimitBytes, ctx.tool));
    if (!res.ok) {
      throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: the service answered ${res.status} ${res.statusText}${text ? `: ${text.slice(0, 300)}` : ''}`, { details: { status: res.status } });
    }
    if (/\bjson\b/i.test(res.headers.get('content-type') ?? '')) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ThymosError(ErrorCode.TOOL_FAILED, `${ctx.tool}: the service said JSON but sent something else`, { details: { status: res.status } });
      }
    }
    return text;
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
      throw new ThymosError(ErrorCode.TOOL_OUTPUT_TOO_LARGE, `${tool}: the answer is over ${limit} bytes (outputLimitBytes)`, { details: { limit } });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
