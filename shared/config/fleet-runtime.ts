import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

import { z } from 'zod';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { fleetPaths } from './fleet-paths.js';
import type { ThymosConfig } from './thymos-config.js';

/** `run/fleet.json`: what `thymos up` chose, for every client of the fleet. */
export const FleetInfoSchema = z.object({
  nats_url: z.string().min(1),
  /** True when `thymos up` runs the nats-server (port kept across up/down). */
  managed_nats: z.boolean(),
  nats_port: z.number().int().nullable(),
});
export type FleetInfo = z.infer<typeof FleetInfoSchema>;

export function readFleetInfo(config: ThymosConfig): FleetInfo | undefined {
  const file = fleetPaths(config.dataPath).fleetFile;
  if (!existsSync(file)) return undefined;
  const parsed = FleetInfoSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `${file} is malformed: ${parsed.error.message}; remove it and run thymos up`);
  return parsed.data;
}

export function writeFleetInfo(config: ThymosConfig, info: FleetInfo): void {
  const paths = fleetPaths(config.dataPath);
  mkdirSync(paths.run, { recursive: true });
  writeFileSync(`${paths.fleetFile}.tmp`, JSON.stringify(info, null, 2));
  renameSync(`${paths.fleetFile}.tmp`, paths.fleetFile);
}

/** `[nats] url`, else the server `thymos up` runs for this data directory. */
export function fleetNatsUrl(config: ThymosConfig): string {
  if (config.nats.url) return config.nats.url;
  const info = readFleetInfo(config);
  if (!info) {
    throw new ThymosError(
      ErrorCode.FLEET_NOT_RUNNING,
      `no fleet has been started for ${config.dataPath} and [nats] url is unset: run thymos up`,
    );
  }
  return info.nats_url;
}
