import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { thymosRoot } from '../../shared/config/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';

/**
 * The bundled `thymos` command (`dist/bin/thymos.js`) that pm2 runs for the supervisor
 * and every agent: compiled JavaScript, never tsx, so each process starts fast and small.
 * Found from this module's location, whether it runs from source, `dist/` or the bundle.
 */
export function thymosBinPath(): string {
  const bin = join(thymosRoot(), 'dist', 'bin', 'thymos.js');
  if (!existsSync(bin)) throw new ThymosError(ErrorCode.INTERNAL, `${bin} is missing: run npm run build`);
  return bin;
}
