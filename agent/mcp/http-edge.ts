import type { IncomingMessage, ServerResponse } from 'node:http';

import type { ErrorCode } from '../../shared/errors/index.js';

/*
 * The plain parts of an agent's HTTP edge: reading a request's headers and its body within a
 * limit, telling a loopback origin, and answering with a JSON-RPC error that carries its code.
 */

/** JSON-RPC error codes used on the HTTP edge (the protocol's own numbers). */
export const JSONRPC_PARSE_ERROR = -32700;
export const JSONRPC_INVALID_REQUEST = -32600;
export const JSONRPC_SERVER_ERROR = -32000;

/** A header's value, the first when it came more than once. */
export function headerValue(h: string | string[] | undefined): string | undefined {
  return Array.isArray(h) ? h[0] : h;
}

/** Whether an Origin header names this machine (127.0.0.1, localhost, ::1). */
export function isLoopbackOrigin(origin: string): boolean {
  try {
    const host = new URL(origin).hostname;
    return host === '127.0.0.1' || host === 'localhost' || host === '[::1]' || host === '::1';
  } catch {
    return false;
  }
}

/** The body as text, or `too_large` past `limit` bytes (declared or sent), read on so the socket stays usable. */
export function readBody(req: IncomingMessage, limit: number): Promise<{ kind: 'ok'; text: string } | { kind: 'too_large' }> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve({ kind: 'too_large' });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Stop buffering but keep draining, so the socket stays usable for the 413 answer.
        req.off('data', onData);
        req.resume();
        resolve({ kind: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve({ kind: 'ok', text: Buffer.concat(chunks).toString('utf8') }));
    req.once('error', reject);
  });
}

/** Answers with a JSON-RPC error of `code`, its data carrying the Thymos error code. */
export function sendJsonRpcError(res: ServerResponse, status: number, code: number, message: string, thymosCode: ErrorCode): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message, data: { code: thymosCode } } }));
}
