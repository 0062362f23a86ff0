import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connect, type Fleet } from '../client/fleet-client.js';
import { loadConfig } from '../shared/config/thymos-config.js';
import { downFleet, upFleet } from '../supervisor/launch/fleet-launcher.js';
import { killFleet } from '../test/helpers/fleet.js';

/**
 * Runs `run` against a real fleet in a temp folder: `world.pkl` and `thymos.toml` (data in
 * `data/`, plus `toml` lines) are written, the fleet comes up, and whatever happens it is
 * brought down and its processes killed by pid. The folder is removed, unless KEEP is set in the
 * environment (its path is printed): the fleet's logs stay for a look.
 */
export async function withBenchFleet<T>(
  name: string,
  pkl: string,
  toml: string[],
  run: (fleet: Fleet, data: string) => Promise<T>,
): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), `thymos-bench-${name}-`));
  const data = join(dir, 'data');
  writeFileSync(join(dir, 'world.pkl'), pkl);
  writeFileSync(join(dir, 'thymos.toml'), ['data_dir = "data"', '[domain]', 'schema = "world.pkl"', ...toml].join('\n'));
  const config = loadConfig(join(dir, 'thymos.toml'));
  try {
    await upFleet(config);
    const fleet = await connect(config);
    let result: T;
    try {
      result = await run(fleet, data);
    } finally {
      await fleet.close();
    }
    await downFleet(config);
    return result;
  } finally {
    await killFleet(data);
    if (process.env.KEEP) console.log('kept', dir);
    else rmSync(dir, { recursive: true, force: true });
  }
}
