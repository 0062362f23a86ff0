import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { type PklReadScope, readableInApp, SYSTEM_FOLDERS, within } from './pkl-read-scope.js';

/** How far the check of an application's folder goes before it refuses the folder. */
export interface LinkCheckLimits {
  /** @default 32 */
  readonly maxDepth?: number;
  /** Entries looked at, folders included. @default 20000 */
  readonly maxEntries?: number;
}

/**
 * Refuses (SCHEMA_READ_REFUSED, naming the link and its target) an application's folder that
 * holds a symbolic link the domain could read something else through: one whose real path lies
 * outside the folder and Thymos's schemas, in a hidden part or `node_modules` of the folder, in
 * /proc, /dev or /sys, in the data directory, or nowhere (a dangling link can be pointed anywhere later). pkl allows
 * reads by the path it is given, so a link named `secrets.txt` would pass its allow-list.
 * Hidden entries and `node_modules` (links named so too) are not looked into: nothing in them may be read.
 */
export function refuseOutsideLinks(scope: PklReadScope, file: string, limits: LinkCheckLimits = {}): void {
  const maxDepth = limits.maxDepth ?? 32;
  const maxEntries = limits.maxEntries ?? 20_000;
  let seen = 0;
  const walk = (dir: string, depth: number): void => {
    if (depth > maxDepth) tooLarge(file, scope, `deeper than ${maxDepth} folders at ${dir}`);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (++seen > maxEntries) tooLarge(file, scope, `more than ${maxEntries} entries`);
      // Nothing under a hidden name or node_modules may be read, links named so included: none is followed.
      if (!readableInApp(entry.name)) continue;
      const path = join(dir, entry.name);
      // The data directory may not be read: nothing in it is followed.
      if (scope.excluded.includes(path)) continue;
      if (entry.isSymbolicLink()) checkLink(path, scope, file);
      else if (entry.isDirectory()) walk(path, depth + 1);
    }
  };
  walk(scope.appReal, 0);
}

function checkLink(link: string, scope: PklReadScope, file: string): void {
  let target: string;
  try {
    target = realpathSync(link);
  } catch (err) {
    refuse(file, link, resolve(link, '..', readlinkOrEmpty(link)), 'which does not resolve to a file', err);
  }
  if (SYSTEM_FOLDERS.some((s) => within(target, s))) refuse(file, link, target, 'in a system folder');
  if (within(target, scope.schemas)) return;
  // In any letter case: on a file system that ignores it, `DATA` is `data`.
  const folded = target.toLowerCase();
  const excluded = scope.excluded.map((folder) => folder.toLowerCase());
  if (excluded.some((folder) => within(folded, folder))) refuse(file, link, target, 'in the data directory');
  // A link to a folder above an excluded one would name it past its patterns (`loop/data/…` for `loop -> .`).
  if (excluded.some((folder) => within(folder, folded))) refuse(file, link, target, 'a folder that holds the data directory');
  if (within(target, scope.appReal) && readableInApp(relative(scope.appReal, target))) return;
  refuse(file, link, target, "outside the application's folder and Thymos's schemas, or in a hidden part or node_modules of it");
}

function refuse(file: string, link: string, target: string, where: string, cause?: unknown): never {
  throw new ThymosError(
    ErrorCode.SCHEMA_READ_REFUSED,
    `domain schema ${file}: the link ${link} points to ${target}, ${where}; evaluating the domain reads only the application's folder and Thymos's schemas (remove the link, or copy what it should read into the folder)`,
    { cause, location: { file }, details: { link, target } },
  );
}

function tooLarge(file: string, scope: PklReadScope, what: string): never {
  throw new ThymosError(
    ErrorCode.SCHEMA_READ_REFUSED,
    `domain schema ${file}: the application's folder ${scope.app} is too large to check for links (${what}); keep the Pkl modules in a folder of their own`,
    { location: { file } },
  );
}

function readlinkOrEmpty(link: string): string {
  try {
    return readlinkSync(link);
  } catch {
    return '';
  }
}
