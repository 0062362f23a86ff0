import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { create, extract, list } from 'tar';

import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';

/**
 * Packs an agent's private data into one `archive/<id>.tar.gz` and back. Each step
 * leaves either the directory or the archive whole: the archive is written under a
 * temporary name, checked and renamed before the directory is removed; a restore
 * extracts aside and renames into place before the archive is removed.
 */
export class AgentArchive {
  readonly #agents: string;
  readonly #archive: string;

  constructor(paths: { agents: string; archive: string }) {
    this.#agents = paths.agents;
    this.#archive = paths.archive;
  }

  fileOf(id: string): string {
    return join(this.#archive, `${id}.tar.gz`);
  }

  isArchived(id: string): boolean {
    return existsSync(this.fileOf(id));
  }

  /** Packs `agents/<id>/` (an agent never started packs as an empty directory). */
  async pack(id: string): Promise<string> {
    const dir = join(this.#agents, id);
    const file = this.fileOf(id);
    if (existsSync(file) && !existsSync(dir)) return file;
    const tmp = `${file}.partial`;
    try {
      mkdirSync(dir, { recursive: true });
      mkdirSync(this.#archive, { recursive: true });
      // The lock file names a process that no longer runs; it must not come back on restore.
      await create({ gzip: true, file: tmp, cwd: this.#agents, portable: true, filter: (path) => !path.endsWith('/agent.pid') }, [id]);
      let entries = 0;
      await list({ file: tmp, onReadEntry: () => void entries++ });
      if (entries === 0) throw new Error('the archive came out empty');
      renameSync(tmp, file);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw new ThymosError(
        ErrorCode.ARCHIVE_ERROR,
        `archiving ${id} into ${file} failed; its data stays in ${dir}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    rmSync(dir, { recursive: true, force: true });
    return file;
  }

  /** Unpacks `archive/<id>.tar.gz` into `agents/<id>/` and removes the archive. */
  async unpack(id: string): Promise<void> {
    const dir = join(this.#agents, id);
    const file = this.fileOf(id);
    if (!existsSync(file)) {
      if (existsSync(dir)) return;
      throw new ThymosError(ErrorCode.ARCHIVE_ERROR, `no archive for ${id}: expected ${file}`);
    }
    if (existsSync(dir)) {
      throw new ThymosError(ErrorCode.ARCHIVE_ERROR, `cannot restore ${id}: both ${file} and ${dir} exist; move one away`);
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
        `restoring ${id} from ${file} failed; the archive is kept: ${(err as Error).message}`,
        { cause: err },
      );
    } finally {
      rmSync(aside, { recursive: true, force: true });
    }
    rmSync(file, { force: true });
  }
}
