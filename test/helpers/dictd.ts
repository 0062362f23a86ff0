import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const b64 = (n: number): string => (n < 64 ? B64[n]! : b64(Math.floor(n / 64)) + B64[n % 64]);

/**
 * Writes a dictionary in dictd's format, as FreeDict ships it (`freedict-<pair>.index` and
 * `.dict.dz` in `dir`): the index (headword, base-64 offset and length) and the gzipped entries.
 *
 * @example
 * writeDictionary(dir, 'fra-eng', [['commande', 'commande /kɔmɑ̃d/ <n, fem>\norder\n']]);
 */
export function writeDictionary(dir: string, pair: string, entries: Array<[string, string]>): void {
  let body = '';
  const index: string[] = [];
  for (const [head, text] of entries) {
    const bytes = Buffer.byteLength(body);
    body += text;
    index.push(`${head}\t${b64(bytes)}\t${b64(Buffer.byteLength(text))}`);
  }
  writeFileSync(join(dir, `freedict-${pair}.index`), `${index.join('\n')}\n`);
  writeFileSync(join(dir, `freedict-${pair}.dict.dz`), gzipSync(body));
}
