import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import type { DomainSchema, LifecycleState } from '../../shared/domain/domain-schema.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';

/**
 * Agents held in one state by configuration: `pinned` in the Pkl schema, then `[lifecycle]
 * pins` (which wins). Together they must name defined agents and fit the capacity.
 */
export function fleetPins(domain: DomainSchema, config: ThymosConfig): ReadonlyMap<string, LifecycleState> {
  const pins = new Map<string, LifecycleState>();
  for (const [id, def] of Object.entries(domain.agents)) if (def.pinned) pins.set(id, def.pinned);
  for (const [id, state] of Object.entries(config.lifecycle.pins)) pins.set(id, state);
  const { max_active, max_running } = config.lifecycle;
  for (const id of pins.keys()) {
    if (!domain.agents[id]) {
      throw new ThymosError(ErrorCode.CONFIG_INVALID, `lifecycle.pins: no agent "${id}" in the domain schema`, { location: { file: config.file, path: `lifecycle.pins.${id}` } });
    }
  }
  const active = [...pins.values()].filter((s) => s === 'active').length;
  const running = [...pins.values()].filter((s) => s === 'active' || s === 'listening').length;
  if (active > max_active || running > max_running) {
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `pins (Pkl pinned and [lifecycle] pins) hold ${active} agent(s) active and ${running} running; expected at most max_active = ${max_active} and max_running = ${max_running}`,
      { location: { file: config.file, path: 'lifecycle.pins' } },
    );
  }
  return pins;
}
