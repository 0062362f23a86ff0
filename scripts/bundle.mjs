// Bundles the `thymos` command into dist/bin/: one file per lazily loaded command, and
// the entry of the worker thread a Script tool runs in, which the agent loads from there.
// Agents start from this bundle; loading one file instead of hundreds of modules
// saves about 100 ms per agent start (docs/benchmarks.md).
import { chmodSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

rmSync('dist/bin', { recursive: true, force: true });
await build({
  entryPoints: { thymos: 'cli/thymos.ts', 'script-worker': 'agent/tools/script-worker.ts' },
  outdir: 'dist/bin',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // Native engine and pino's worker files must stay on disk where they are; pm2 and
  // prom-client load their own files at run time (and only the supervisor needs them).
  // surrealdb stays shared with @surrealdb/node: the engine checks features against the
  // SDK's own objects, so a second, bundled copy of the SDK would see no live queries.
  // fastembed loads native tokenizers and ONNX Runtime, only in the supervisor's embedding service.
  external: ['@surrealdb/node', 'surrealdb', 'pino', 'pm2', 'prom-client', 'fastembed'],
  banner: { js: "import { createRequire as __thymosRequire } from 'node:module'; const require = __thymosRequire(import.meta.url);" },
  logLevel: 'warning',
});
chmodSync('dist/bin/thymos.js', 0o755);
