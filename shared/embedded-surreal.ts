import { mkdirSync } from 'node:fs';
import { createNodeEngines } from '@surrealdb/node';
import { Surreal } from 'surrealdb';
import { ErrorCode, ThymosError } from './errors.js';

export interface EmbeddedSurrealOptions {
  namespace: string;
  database: string;
  /** SurrealQL run once after opening (`DEFINE … IF NOT EXISTS`). */
  schema: string;
  timeoutMs: number;
}

/**
 * Opens (creating if needed) an embedded surrealkv database at `dir`. Fails with
 * DATABASE_ERROR rather than hanging: a second opener of a held path never settles.
 */
export async function openEmbeddedSurreal(dir: string, options: EmbeddedSurrealOptions): Promise<Surreal> {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new ThymosError(ErrorCode.DATABASE_ERROR, `cannot create database directory ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const db = new Surreal({ engines: createNodeEngines() });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ThymosError(ErrorCode.DATABASE_ERROR, `opening ${dir} did not finish within ${options.timeoutMs} ms (is another process holding it?)`)),
      options.timeoutMs,
    );
  });
  try {
    await Promise.race([
      (async () => {
        await db.connect(`surrealkv://${dir}`);
        await db.use({ namespace: options.namespace, database: options.database });
        await db.query(options.schema);
      })(),
      deadline,
    ]);
  } catch (err) {
    throw err instanceof ThymosError
      ? err
      : new ThymosError(ErrorCode.DATABASE_ERROR, `cannot open database ${dir}: ${(err as Error).message}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
  return db;
}
