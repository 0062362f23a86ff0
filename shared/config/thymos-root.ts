import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { ErrorCode, ThymosError } from '../errors/errors.js';

/** The root of the Thymos package (where its package.json is), found from this module's location. */
export function thymosRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'thymos') return dir;
      } catch {
        // not ours: keep looking upwards
      }
    }
    dir = dirname(dir);
  }
  throw new ThymosError(ErrorCode.INTERNAL, `cannot find the thymos package above ${fileURLToPath(import.meta.url)}`);
}

/** The offline embedding model Thymos builds (`npm run build:model`) and ships. */
export function offlineModelDir(): string {
  return join(thymosRoot(), 'models', 'glove-100d');
}

/** The glossaries for intents in other languages (`npm run build:glossary`), built on the machine from its dictionaries and never shipped. */
export function glossaryDir(): string {
  return join(thymosRoot(), 'models', 'glossary');
}
