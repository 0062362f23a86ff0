import type { ServerResponse } from 'node:http';

import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';

/** A JSON-RPC request: a method and an id (notifications and answers have no id to cancel, or no method). */
const RequestSchema = z.object({ method: z.string(), id: z.union([z.string(), z.number()]) });

/** The ids of the JSON-RPC requests in a POST body (one message or a batch). */
function requestIds(body: unknown): Array<string | number> {
  return (Array.isArray(body) ? body : [body]).flatMap((m) => {
    const request = RequestSchema.safeParse(m);
    return request.success ? [request.data.id] : [];
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
      transport.onmessage?.({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId, reason: 'the client closed its connection' },
      });
    }
  });
}
