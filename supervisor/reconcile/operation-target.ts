import type { LifecycleState } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { AgentMode } from '../../shared/protocol/index.js';
import type { AgentEntry } from '../lifecycle/agent-registry.js';
import { RUNNING } from '../lifecycle/agent-states.js';

/** A single-agent command (`thymos start|stop|archive|restore`). */
export type AgentOperation = 'start' | 'stop' | 'archive' | 'restore';

/**
 * The state a single-agent command takes `entry` to, checked against its pin and the fleet's
 * limits (the states of `all` now): AGENT_PINNED or CAPACITY_EXCEEDED when it may not.
 */
export function operationTarget(
  op: AgentOperation,
  entry: AgentEntry,
  o: {
    mode?: AgentMode | undefined;
    pinned: LifecycleState | undefined;
    all: readonly AgentEntry[];
    lifecycle: { max_running: number; max_active: number };
  },
): LifecycleState {
  const to: LifecycleState =
    op === 'start'
      ? o.mode === 'passive'
        ? 'listening'
        : 'active'
      : op === 'stop'
        ? 'dormant'
        : op === 'archive'
          ? 'archived'
          : entry.state === 'archived'
            ? 'dormant'
            : entry.state;
  const id = entry.id;
  if (o.pinned && o.pinned !== to) {
    throw new ThymosError(
      ErrorCode.AGENT_PINNED,
      `${id} is pinned to ${o.pinned} by configuration ([lifecycle] pins or the Pkl schema's pinned); ${op} would make it ${to}`,
    );
  }
  const running = o.all.filter((e) => RUNNING(e.state)).length;
  if (RUNNING(to) && !RUNNING(entry.state) && running >= o.lifecycle.max_running) {
    throw new ThymosError(
      ErrorCode.CAPACITY_EXCEEDED,
      `cannot start ${id}: ${running} agents already run and [lifecycle] max_running is ${o.lifecycle.max_running}`,
    );
  }
  const active = o.all.filter((e) => e.state === 'active').length;
  if (to === 'active' && entry.state !== 'active' && active >= o.lifecycle.max_active) {
    throw new ThymosError(
      ErrorCode.CAPACITY_EXCEEDED,
      `cannot make ${id} active: ${active} agents already are and [lifecycle] max_active is ${o.lifecycle.max_active}`,
    );
  }
  return to;
}
