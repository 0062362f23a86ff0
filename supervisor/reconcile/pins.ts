import type { ThymosConfig } from '../../shared/config/index.js';
import type { DomainSchema, LifecycleState } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';

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
      throw new ThymosError(ErrorCode.CONFIG_INVALID, `lifecycle.pins: no agent "${id}" in the domain schema`, {
        location: { file: config.file, path: `lifecycle.pins.${id}` },
      });
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

/**
 * Agents' pinned MCP ports: `port` in the Pkl schema, then `[supervisor] agent_ports` (which
 * wins). Together they must name defined agents and give each its own port.
 */
export function fleetPorts(domain: DomainSchema, config: ThymosConfig): ReadonlyMap<string, number> {
  const ports = new Map<string, number>();
  for (const [id, def] of Object.entries(domain.agents)) if (def.port != null) ports.set(id, def.port);
  for (const [id, port] of Object.entries(config.supervisor.agent_ports)) {
    if (!domain.agents[id]) {
      throw new ThymosError(ErrorCode.CONFIG_INVALID, `supervisor.agent_ports: no agent "${id}" in the domain schema`, {
        location: { file: config.file, path: `supervisor.agent_ports.${id}` },
      });
    }
    ports.set(id, port);
  }
  const owners = new Map<number, string>();
  for (const [id, port] of ports) {
    const other = owners.get(port);
    if (other) {
      throw new ThymosError(
        ErrorCode.CONFIG_INVALID,
        `${other} and ${id} are both pinned to port ${port} (Pkl port and [supervisor] agent_ports); expected a port each`,
        { location: { file: config.file, path: 'supervisor.agent_ports' } },
      );
    }
    owners.set(port, id);
  }
  return ports;
}
