import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { createNodeEngines } from '@surrealdb/node';
import { createRemoteEngines, Surreal } from 'surrealdb';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { isAlive, readLockPid } from '../platform/data-lock.js';

export interface EmbeddedSurrealOptions {
  namespace: string;
  database: string;
  /** SurrealQL run once after opening (`DEFINE … IF NOT EXISTS`). */
  schema?: string;
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
      () =>
        reject(
          new ThymosError(ErrorCode.DATABASE_ERROR, `opening ${dir} did not finish within ${options.timeoutMs} ms: ${whyOpenHangs(dir)}`),
        ),
      options.timeoutMs,
    );
  });
  const opening = (async () => {
    await db.connect(`surrealkv://${dir}`);
    await db.use({ namespace: options.namespace, database: options.database });
    if (options.schema) await db.query(options.schema);
  })();
  try {
    await Promise.race([opening, deadline]);
  } catch (err) {
    // An open that was only slow may still finish: closed then, it does not keep the path's lock
    // from whoever opens it next.
    void opening
      .then(
        () => db.close(),
        () => db.close(),
      )
      .catch(() => undefined);
    throw err instanceof ThymosError
      ? err
      : new ThymosError(ErrorCode.DATABASE_ERROR, `cannot open database ${dir}: ${(err as Error).message}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
  return db;
}

/**
 * Why an open hangs: another live process holds the store (surrealkv's `LOCK` names its pid),
 * or its files are damaged (surrealkv then never answers rather than failing).
 */
function whyOpenHangs(dir: string): string {
  const holder = readLockPid(join(dir, 'LOCK'));
  if (holder !== undefined && holder !== process.pid && isAlive(holder)) return `process ${holder} holds it (its LOCK file names that pid)`;
  return 'no other process holds it, so its files are probably damaged; restore the directory from a backup, or move it away to start afresh with an empty database';
}

export interface RemoteSurrealOptions {
  namespace: string;
  database: string;
  username?: string | undefined;
  password?: string | undefined;
  timeoutMs: number;
}

/**
 * Connects to a SurrealDB server (`ws://`, `wss://`, `http://`, `https://`), signing in when a
 * user is given; reconnects by itself after a dropped connection. Fails with DATABASE_ERROR
 * naming the url rather than waiting forever.
 */
export async function openRemoteSurreal(url: string, options: RemoteSurrealOptions): Promise<Surreal> {
  // Node 20 has no global WebSocket; `ws` provides the same interface.
  const websocketImpl = (globalThis.WebSocket ?? createRequire(import.meta.url)('ws')) as typeof WebSocket;
  const db = new Surreal({ engines: createRemoteEngines(), websocketImpl });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ThymosError(
            ErrorCode.DATABASE_ERROR,
            `SurrealDB at ${url} did not accept a connection within ${options.timeoutMs} ms ([world] url)`,
          ),
        ),
      options.timeoutMs,
    );
  });
  try {
    await Promise.race([
      db.connect(url, {
        namespace: options.namespace,
        database: options.database,
        reconnect: true,
        ...(options.username ? { authentication: { username: options.username, password: options.password ?? '' } } : {}),
      }),
      deadline,
    ]);
  } catch (err) {
    void db.close().catch(() => undefined);
    throw err instanceof ThymosError
      ? err
      : new ThymosError(ErrorCode.DATABASE_ERROR, `cannot connect to SurrealDB at ${url} ([world] url): ${(err as Error).message}`, {
          cause: err,
        });
  } finally {
    clearTimeout(timer);
  }
  return db;
}
