import nodeModule from 'node:module';

/** Node's on-disk cache of compiled code: Node ≥ 22.1 has it (`NODE_COMPILE_CACHE`), Node 20 does not. */
interface CompileCacheApi {
  enableCompileCache?: (dir?: string) => unknown;
  flushCompileCache?: () => void;
  getCompileCacheDir?: () => string | undefined;
}

const api = nodeModule as unknown as CompileCacheApi;

/** True when this Node can keep compiled code on disk for the next process (`module.enableCompileCache`, Node ≥ 22.1). */
export function compileCacheAvailable(): boolean {
  return typeof api.enableCompileCache === 'function';
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
