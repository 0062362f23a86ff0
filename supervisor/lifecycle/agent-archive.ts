import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { create, extract, list } from 'tar';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { type ArchiveStore, LocalArchiveStore } from './archive-store.js';

/**
 * Packs an agent's private data into one archive in an ArchiveStore and back. Each step leaves either
 * the directory or the stored archive whole: the archive is packed under a temporary name, checked and
 * stored before the directory is removed; a restore extracts aside and renames into place before the
 * stored archive is deleted. Either step run twice (after a crash between its parts) finishes the first.
 * Each write to the store carries the fencing token of the claim on the agent.
 */
export class AgentArchive {
  readonly #agents: string;
  readonly #scratch: string;
  readonly #store: ArchiveStore;

  /** `paths.archive` holds archives being packed, and the archives themselves unless another store is given. */
  constructor(paths: { agents: string; archive: string }, store: ArchiveStore = new LocalArchiveStore(paths.archive)) {
    this.#agents = paths.agents;
    this.#scratch = paths.archive;
    this.#store = store;
  }

  /** Packs `agents/<id>/` into the store (an agent never started packs as an empty directory). */
  async pack(id: string, token: number): Promise<void> {
    const dir = join(this.#agents, id);
    if (!existsSync(dir) && (await this.#store.get(id))) return;
    const tmp = join(this.#scratch, `${id}.tar.gz.partial`);
    try {
      mkdirSync(dir, { recursive: true });
      mkdirSync(this.#scratch, { recursive: true });
      // The lock file names a process that no longer runs; it must not come back on restore.
      await create({ gzip: true, file: tmp, cwd: this.#agents, portable: true, filter: (path) => !path.endsWith('/agent.pid') }, [id]);
      let entries = 0;
      await list({ file: tmp, onReadEntry: () => void entries++ });
      if (entries === 0) throw new Error('the archive came out empty');
      await this.#store.put(id, tmp, token);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw new ThymosError(
        ErrorCode.ARCHIVE_ERROR,
        `archiving ${id} into ${this.#store.where(id)} failed; its data stays in ${dir}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    rmSync(dir, { recursive: true, force: true });
  }

  /** Unpacks `id`'s stored archive into `agents/<id>/` and deletes it from the store. */
  async unpack(id: string, token: number): Promise<void> {
    const dir = join(this.#agents, id);
    const where = this.#store.where(id);
    const file = await this.#store.get(id);
    if (!file) {
      if (existsSync(dir)) return;
      throw new ThymosError(ErrorCode.ARCHIVE_ERROR, `no archive for ${id}: expected ${where}`);
    }
    if (existsSync(dir)) {
      throw new ThymosError(ErrorCode.ARCHIVE_ERROR, `cannot restore ${id}: both ${where} and ${dir} exist; move one away`);
    }
    const aside = join(this.#agents, `.restore-${id}-${process.pid}-${Date.now()}`);
    try {
      mkdirSync(aside, { recursive: true });
      await extract({ file, cwd: aside, strict: true });
      if (!existsSync(join(aside, id))) throw new Error(`the archive holds no ${id}/ directory`);
      renameSync(join(aside, id), dir);
    } catch (err) {
      throw new ThymosError(
        ErrorCode.ARCHIVE_ERROR,
        `restoring ${id} from ${where} failed; the archive is kept: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    } finally {
      rmSync(aside, { recursive: true, force: true });
    }
    await this.#store.delete(id, token);
  }
}
