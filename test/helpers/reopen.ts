/**
 * @surrealdb/node releases a surrealkv lock a moment after `close()` resolves, and an open of
 * the path before then never settles. Agents never reopen in-process; tests that do ask again
 * with a short deadline until the lock is free or `deadlineMs` has passed.
 */
export async function reopen<T>(open: (timeoutMs: number) => Promise<T>, deadlineMs = 20_000): Promise<T> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await open(500);
    } catch (err) {
      if (Date.now() > until) throw err;
    }
  }
}
