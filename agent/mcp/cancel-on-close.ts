import type { ServerResponse } from 'node:http';

import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/** The ids of the JSON-RPC requests in a POST body (one message or a batch); notifications and answers have none to cancel. */
function requestIds(body: unknown): Array<string | number> {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => {
    if (typeof m !== 'object' || m === null || typeof (m as { method?: unknown }).method !== 'string') return [];
    const id = (m as { id?: unknown }).id;
    return typeof id === 'string' || typeof id === 'number' ? [id] : [];
  });
}

/**
 * A closed connection is a cancel: when the HTTP response of a POST closes before it was
 * finished (the client died, or gave up without saying so), each request the POST carried is
 * cancelled as if the client had sent `notifications/cancelled` for it. The handler's signal is
 * aborted, so a model still writing a reply is stopped, and what was said so far is kept, cut,
 * as for any cancel. A request already answered is not touched: its response finished first.
 */
export function cancelOnClose(transport: Transport, res: ServerResponse, body: unknown): void {
  const ids = requestIds(body);
  if (ids.length === 0) return;
  res.once('close', () => {
    if (res.writableFinished) return;
    for (const requestId of ids) {
      transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'the client closed its connection' } });
    }
  });
}
