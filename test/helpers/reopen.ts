/**
 * @surrealdb/node releases a surrealkv lock a moment after `close()` resolves, and an open of
 * the path before then never settles. Agents never reopen in-process; tests that do ask again
 * with a short deadline until the lock is free or `deadlineMs` has passed.
 */
export async function reopen<T>(open: (timeoutMs: number) => Promise<T>, deadlineMs = 20_000): Promise<T> {
  const until = Date.now() + deadlineMs;
  // Each try waits longer (0.5 s, 1 s, 2 s, then 4 s): on a busy machine an open of a free path can take more than the first.
  for (let attempt = 0; ; attempt++) {
    try {
      return await open(Math.min(500 * 2 ** attempt, 4000));
    } catch (err) {
      if (Date.now() > until) throw err;
    }
  }
}
