import nodeModule from 'node:module';

/** Node's on-disk cache of compiled code: Node ≥ 22.1 has it (`NODE_COMPILE_CACHE`), ≥ 22.10 can write it while running, Node 20 has none. */
interface CompileCacheApi {
  enableCompileCache?: (dir?: string) => unknown;
  flushCompileCache?: () => void;
  getCompileCacheDir?: () => string | undefined;
}

const api = nodeModule as unknown as CompileCacheApi;

/**
 * True when this Node can keep compiled code on disk for the next process and write it while
 * running (`module.enableCompileCache` and `flushCompileCache`, Node ≥ 22.10): Node 22.1 to 22.9
 * write the cache only at exit, which a long-lived agent may never reach.
 *
 * Node keeps one folder per version inside the cache, so a Node upgrade starts a new one beside
 * the old (delete `<data_dir>/cache/compile` to reclaim it). The cache holds code the agents
 * run: it has the trust of the data directory it lives in.
 */
export function compileCacheAvailable(): boolean {
  return typeof api.enableCompileCache === 'function' && typeof api.flushCompileCache === 'function';
}

/**
 * Writes what this process compiled so far into its compile cache, when one is on. Node writes
 * the cache only at exit otherwise, which a long-lived agent or an unclaimed spare may never
 * reach, so the next agent to start would compile everything again. Writing it twice is
 * harmless: Node keeps one entry per module, keyed by its source.
 */
export function flushCompileCache(): void {
  if (api.getCompileCacheDir?.()) api.flushCompileCache?.();
}
