import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where agents' packed data is kept while they are Archived. Every write takes the fencing token of the
 * writer's claim on the agent (see AgentOwnership), so a store shared between hosts can refuse a writer
 * whose claim is older than the last it saw. Each operation is safe to repeat: a put replaces what is
 * stored, a delete of nothing does nothing.
 */
export interface ArchiveStore {
  /** Stores `file` (a packed archive on the local disk) as `id`'s, replacing any; the file is moved or removed. */
  put(id: string, file: string, token: number): Promise<void>;
  /** A file on the local disk holding `id`'s packed data, or undefined when none is stored. */
  get(id: string): Promise<string | undefined>;
  /** Removes `id`'s packed data; nothing when none is stored. */
  delete(id: string, token: number): Promise<void>;
  /** The agents with packed data stored, in id order. */
  list(): Promise<string[]>;
  /** Where `id`'s packed data is (or would be) kept, for messages. */
  where(id: string): string;
}

const SUFFIX = '.tar.gz';

/** Archives as `<dir>/<id>.tar.gz` on this host's disk. The token is not checked: one supervisor holds the directory. */
export class LocalArchiveStore implements ArchiveStore {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  where(id: string): string {
    return join(this.#dir, `${id}${SUFFIX}`);
  }

  /** A rename within the directory: the stored archive is the old one or the new one, never a part. */
  put(id: string, file: string, _token: number): Promise<void> {
    mkdirSync(this.#dir, { recursive: true });
    renameSync(file, this.where(id));
    return Promise.resolve();
  }

  get(id: string): Promise<string | undefined> {
    return Promise.resolve(existsSync(this.where(id)) ? this.where(id) : undefined);
  }

  delete(id: string, _token: number): Promise<void> {
    rmSync(this.where(id), { force: true });
    return Promise.resolve();
  }

  list(): Promise<string[]> {
    if (!existsSync(this.#dir)) return Promise.resolve([]);
    return Promise.resolve(
      readdirSync(this.#dir)
        .filter((name) => name.endsWith(SUFFIX))
        .map((name) => name.slice(0, -SUFFIX.length))
        .sort(),
    );
  }
}
