import { rmSync } from 'node:fs';
/** The q-quantile (0..1) of samples, nearest-rank. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Milliseconds taken by fn. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** A deterministic pseudo-random source (LCG), so every run sees the same data. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 0x1_0000_0000;
  };
}

/**
 * Removes a temp folder an embedded SurrealDB used. surrealkv may still be finishing files for
 * a moment after close, so it tries again for up to two seconds, then leaves the folder and says so.
 */
export async function removeDbDir(dir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch (err) {
      if (attempt >= 10) {
        process.stderr.write(`could not remove ${dir}: ${(err as Error).message}\n`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
