import type { ApprovalsCursor, ApprovalsPage, PendingCall } from '../shared/protocol/index.js';

/**
 * Every call waiting for approval, oldest first, each whole, asked for a page at a time (see
 * `ApprovalsPage`): one reply holds what fits in a NATS message, so any number of calls of up to
 * 64 KiB of arguments each is listed. A call decided between two pages is not listed; one handed
 * in meanwhile is, unless it says it was made before the pages read so far.
 */
export async function allPendingCalls(page: (after: ApprovalsCursor | undefined) => Promise<ApprovalsPage>): Promise<PendingCall[]> {
  const calls: PendingCall[] = [];
  let after: ApprovalsCursor | undefined;
  for (;;) {
    const next = await page(after);
    calls.push(...next.calls);
    // The supervisor's cursor moves past each page: an empty page with a cursor would be one that does not, so it ends the list too.
    if (next.next === null || next.calls.length === 0) return calls;
    after = next.next;
  }
}
