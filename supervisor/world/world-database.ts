import type { Surreal } from 'surrealdb';

import type { ThymosConfig } from '../../shared/config/index.js';
import { openEmbeddedSurreal, openRemoteSurreal } from '../../shared/engines/index.js';

/**
 * The fleet's world database: the SurrealDB server of `[world] url` when set, otherwise
 * the embedded store in `dir` (`data/world`). The registry and the world tables live in it.
 */
export async function openWorldDatabase(config: ThymosConfig, dir: string): Promise<Surreal> {
  const { url, namespace, database, username, password_env } = config.world;
  const timeoutMs = config.agent.db_open_timeout_ms;
  if (url) return openRemoteSurreal(url, { namespace, database, username, password: process.env[password_env], timeoutMs });
  return openEmbeddedSurreal(dir, { namespace, database, timeoutMs });
}
