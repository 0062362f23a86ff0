import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The compiled CLI that agent processes run (never tsx: see docs/benchmarks.md). */
export const THYMOS_BIN = join(REPO_ROOT, 'dist', 'bin', 'thymos.js');
/** The village domain schema. */
export const VILLAGE_SCHEMA = join(REPO_ROOT, 'examples', 'village', 'world.pkl');

export interface Workspace {
  readonly dir: string;
  readonly configPath: string;
  /** Rewrites thymos.toml. */
  writeConfig(toml: string): void;
  dispose(): void;
}

/**
 * A temp folder with a thymos.toml: data under it, the village schema, NATS at
 * `natsUrl` if given, and any extra TOML appended.
 */
export function createWorkspace(options: { natsUrl?: string; extra?: string; schema?: string | null; agent?: string[] } = {}): Workspace {
  const dir = mkdtempSync(join(tmpdir(), 'thymos-test-'));
  const configPath = join(dir, 'thymos.toml');
  const schema = options.schema === undefined ? VILLAGE_SCHEMA : options.schema;
  const lines = ['data_dir = "data"'];
  if (schema) lines.push('[domain]', `schema = ${JSON.stringify(schema)}`);
  lines.push('[agent]', 'shutdown_timeout_ms = 5000', 'heartbeat_ms = 200', 'nats_wait_ms = 1500', ...(options.agent ?? []));
  if (options.natsUrl) lines.push('[nats]', `url = ${JSON.stringify(options.natsUrl)}`);
  lines.push('[log]', 'level = "info"');
  const base = lines.join('\n');
  const write = (toml: string) => writeFileSync(configPath, toml);
  write(`${base}\n${options.extra ?? ''}\n`);
  return {
    dir,
    configPath,
    writeConfig: write,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
