import { realpathSync, statSync } from 'node:fs';
import { dirname, join, parse, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

import { thymosRoot } from '../config/thymos-root.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';

/**
 * What evaluating a domain module may read: the files of the application's folder that are
 * not hidden, not under `node_modules` and not in an excluded folder (the fleet's data
 * directory, with its keys and tokens, when it lies in the application's folder), and Thymos's
 * own `schemas/` folder. Nothing else, whichever way it is named: `..`, an absolute path, a
 * percent-escape or a symbolic link.
 */
export interface PklReadScope {
  /** The application's folder as given (the module's folder unless a root was named). */
  readonly app: string;
  /** Its real path, symbolic links resolved. */
  readonly appReal: string;
  /** The real path of Thymos's `schemas/` folder. */
  readonly schemas: string;
  /** Folders and files of the application's folder it may not read (the data directory, NATS credentials, the TLS key), each as given and as its real path. */
  readonly excluded: readonly string[];
  /**
   * The deepest folder holding both real paths, for pkl's `--root-dir`, which refuses any file
   * whose real path lies outside it; undefined when that folder is `/` and says nothing.
   */
  readonly rootDir: string | undefined;
  /** `--allowed-modules`: Pkl's own modules, packages, and modules of the two folders. */
  readonly allowedModules: string;
  /** `--allowed-resources`: external properties (`-p`), packages, and files of the two folders; never `env:`. */
  readonly allowedResources: string;
}

/** Where another process's environment, memory or devices can be read: never inside a scope. */
export const SYSTEM_FOLDERS = ['/proc', '/dev', '/sys'] as const;

/**
 * The read scope of the module `file`, whose application's folder is `root` (by default the
 * module's own folder), without the folders `exclude`. A `root` that does not hold the module,
 * or that lies in a system folder, is SCHEMA_READ_REFUSED; so is a module in an excluded folder.
 */
export function pklReadScope(file: string, root?: string, exclude: readonly string[] = []): PklReadScope {
  const module = resolve(file);
  const app = resolve(root ?? dirname(module));
  if (!within(module, app)) {
    throw new ThymosError(ErrorCode.SCHEMA_READ_REFUSED, `domain schema ${file}: expected it inside the application's folder ${app}`, {
      location: { file },
    });
  }
  const appReal = realOrSelf(app);
  if (appReal === parse(appReal).root || SYSTEM_FOLDERS.some((s) => within(appReal, s))) {
    throw new ThymosError(
      ErrorCode.SCHEMA_READ_REFUSED,
      `domain schema ${file}: the application's folder ${appReal} would let it read the whole system`,
      { location: { file } },
    );
  }
  const excluded = unique(
    exclude.flatMap((given) => {
      const folder = resolve(given);
      const real = realOrSelf(folder);
      // Named through the application's folder as given or as its real path: both spellings are shut,
      // whichever of them the excluded folder was named by.
      const inApp = within(folder, app) ? [join(appReal, relative(app, folder))] : [];
      const inAppReal = within(real, appReal) ? [join(app, relative(appReal, real))] : [];
      return [folder, real, ...inApp, ...inAppReal];
    }),
  );
  if (excluded.some((folder) => within(module, folder)) || excluded.some((folder) => within(app, folder))) {
    throw new ThymosError(
      ErrorCode.SCHEMA_READ_REFUSED,
      `domain schema ${file}: expected it outside the data directory (${exclude.join(', ')}), which the domain may not read`,
      { location: { file } },
    );
  }
  const schemasGiven = join(thymosRoot(), 'schemas');
  const schemas = realOrSelf(schemasGiven);
  const rootDir = commonFolder(appReal, schemas);
  // Each excluded folder (or file) is shut at the start of every pattern of the application's folder,
  // in any case: on a file system that ignores case, `Data/` opens `data/`.
  const shut = excluded.map((p) => `(?!(?i:${excludedPattern(p).slice(1)}))`).join('');
  const appPrefixes = unique([app, appReal]).map((p) => `^${shut}${filePattern(p).slice(1)}${APP_FILE}`);
  const schemaPrefixes = unique([schemasGiven, schemas, ...schemaAliases(app, schemas)]).map((p) => `${filePattern(p)}${NO_ESCAPE}`);
  const files = [...appPrefixes, ...schemaPrefixes];
  return Object.freeze({
    app,
    appReal,
    schemas,
    excluded,
    rootDir: rootDir === parse(rootDir).root ? undefined : rootDir,
    allowedModules: ['^pkl:', '^package:', '^https:', ...files].join(','),
    allowedResources: ['^prop:', '^package:', ...files].join(','),
  });
}

/** Whether `path` is `folder` or lies under it. */
export function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/** Whether a path relative to the application's folder is one the domain may read: no hidden part, no `node_modules`. */
export function readableInApp(relativePath: string): boolean {
  return relativePath.split(sep).every((part) => !part.startsWith('.') && part !== 'node_modules');
}

// No percent-escape but %20: an escape could spell `..`, `/` or a hidden name past the checks.
const NO_ESCAPE = '(?!.*%(?!20))';
// Inside the application's folder: no part that starts with a dot (`.env`, `.git`, `..`), none named node_modules, and no
// empty part (`a//b`), which could spell an excluded folder past its check.
const APP_FILE = `${NO_ESCAPE}(?!.*//)(?!(?:[^/]*/)*(?:\\.|node_modules(?:/|$)))`;

/**
 * The start of a pattern matching file URIs under `folder`, in the forms pkl writes them
 * (`file:/a/b/`, `file:///a/b/`). Regex characters are escaped and a comma is spelled \x2C,
 * since pkl splits the option's value at commas.
 */
function filePattern(folder: string): string {
  const path = pathToFileURL(folder).pathname.replace(/\/$/, '');
  const escaped = path.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&').replace(/,/g, '\\x2C');
  return `^file:(?://)?${escaped}/`;
}

/** The pattern of an excluded path: everything under it when it is a folder (or not there yet), the file alone when it is one. */
function excludedPattern(path: string): string {
  const file = (() => {
    try {
      return statSync(path).isFile();
    } catch {
      return false;
    }
  })();
  return file ? `${filePattern(path).slice(0, -1)}$` : filePattern(path);
}

/**
 * Other names of the schemas folder an application amends by: `node_modules/thymos/schemas`
 * in the application's folder or one above it (a workspace), when that is a link to it (npm
 * link, pnpm, workspaces). Node resolves a package's own path, so `thymosRoot()` is the real one.
 */
function schemaAliases(app: string, schemas: string): string[] {
  const found: string[] = [];
  for (let dir = app; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', 'thymos', 'schemas');
    if (realOrSelf(candidate) === schemas) found.push(candidate);
    if (dir === dirname(dir)) return found;
  }
}

function commonFolder(a: string, b: string): string {
  let dir = a;
  while (!within(b, dir)) dir = dirname(dir);
  return dir;
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function unique(paths: string[]): string[] {
  return [...new Set(paths)];
}
