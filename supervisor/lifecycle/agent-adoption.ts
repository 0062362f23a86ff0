import { Pm2Names, type ThymosConfig } from '../../shared/config/index.js';
import { toThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { AgentMode } from '../../shared/protocol/index.js';
import type { ProcessManager } from '../pm2/process-manager.js';
import type { AgentLink } from './agent-link.js';
import type { AgentRegistry } from './agent-registry.js';
import { CONTROL_TIMEOUT_MS } from './agent-starter.js';
import { RUNNING } from './agent-states.js';
import type { AgentTransitions } from './agent-transitions.js';
import type { PortAllocator } from './port-allocator.js';

export interface AdoptionOptions {
  config: ThymosConfig;
  /** The agents of the domain. */
  ids: readonly string[];
  registry: AgentRegistry;
  processes: ProcessManager;
  link: AgentLink;
  ports: PortAllocator;
  transitions: AgentTransitions;
  logger: Logger;
  /** Agents of the domain this supervisor could not claim: another host holds them. A copy pm2 runs here is stopped. */
  notHeld?: ReadonlySet<string>;
  /**
   * Whether what a running agent says of its lease (`get_state`) fits the claims held now: under a
   * lease, it runs under the claim held (or the one it took over); without, under none. An agent that
   * does not fit is stopped (Dormant), to be started again under the claim by the next reconcile.
   * @default every agent fits
   */
  leaseFits?: (id: string, lease: { token: number; fence_at: number } | null | undefined) => boolean;
}

/**
 * What a supervisor finds at its (re)start: agents pm2 still runs are adopted with their pid,
 * port and mode (asked of the agent, else the registry's); agents the registry thought running
 * but pm2 no longer runs become Dormant. An agent pm2 is still starting is waited for. An agent
 * the domain no longer defines is stopped, not adopted.
 */
export async function adoptAgents(o: AdoptionOptions): Promise<{ adopted: string[]; lost: string[] }> {
  const { registry, processes, logger } = o;
  await registry.ensure([...o.ids]);
  const apps = new Map((await processes.list()).map((p) => [p.name, p]));
  const adopted: string[] = [];
  const lost: string[] = [];
  const wanted = new Set(o.ids);
  for (const entry of registry.all()) {
    let app = apps.get(Pm2Names.agent(entry.id));
    apps.delete(Pm2Names.agent(entry.id));
    if (o.notHeld?.has(entry.id)) {
      // Another host holds it: a copy here stops (it would stop itself at its fence), its data kept.
      if (app) {
        await processes.delete(app.name).catch(() => undefined);
        logger.warn({ agent: entry.id }, 'an agent another host holds was running here: stopped, its data kept');
      }
      if (RUNNING(entry.state)) await o.transitions.setState(entry, 'dormant', { mode: null, pid: null }, 'held by another host');
      continue;
    }
    // An agent an edit of the domain removed is never adopted: its process is stopped (it saves a
    // snapshot on the way out) and its data kept, as `thymos reload` would have done.
    if (!wanted.has(entry.id)) {
      if (app) {
        await processes.delete(app.name).catch(() => undefined);
        logger.warn({ agent: entry.id }, 'an agent the domain no longer defines was running: stopped, its data kept');
      }
      if (RUNNING(entry.state)) await o.transitions.setState(entry, 'dormant', { mode: null, pid: null }, 'no longer in the domain schema');
      continue;
    }
    // An agent pm2 is still starting (restarted after a crash, not ready yet) is waited for, not lost.
    if (app?.status === 'launching') app = await processes.settled(app.name, o.config.supervisor.start_timeout_ms);
    if (app && app.status === 'online' && app.pid) {
      let mode: AgentMode = entry.mode ?? 'active';
      let port = entry.port;
      let lease: { token: number; fence_at: number } | null | undefined;
      try {
        const reply = await o.link.control(entry.id, { op: 'get_state' }, CONTROL_TIMEOUT_MS);
        ({ mode, port } = reply.state);
        lease = reply.lease;
      } catch (err) {
        logger.warn(
          { agent: entry.id, err: toThymosError(err).message },
          'adopted agent did not answer get_state; keeping the registry mode',
        );
      }
      if (o.leaseFits && !o.leaseFits(entry.id, lease)) {
        // Started under another claim, or with no lease where there is one now (or the other way round): it stops, to start again under the claim held.
        await processes.delete(app.name).catch(() => undefined);
        logger.warn(
          { agent: entry.id, lease: lease ?? null },
          "a running agent's lease does not fit the claims held: stopped, started again by the next reconcile",
        );
        if (RUNNING(entry.state))
          await o.transitions.setState(entry, 'dormant', { mode: null, pid: null }, 'its lease did not fit the claims held');
        lost.push(entry.id);
        continue;
      }
      if (port != null) o.ports.hold(port);
      await registry.update(entry.id, {
        state: mode === 'active' ? 'active' : 'listening',
        mode,
        pid: app.pid,
        port,
        since: RUNNING(entry.state) ? entry.since : Date.now(),
      });
      adopted.push(entry.id);
    } else {
      o.ports.remember(entry.id, entry.port);
      if (app) await processes.delete(app.name).catch(() => undefined);
      if (RUNNING(entry.state)) {
        await o.transitions.setState(entry, 'dormant', { mode: null, pid: null }, 'not running when the supervisor started');
        lost.push(entry.id);
      }
    }
  }
  for (const name of apps.keys()) {
    if (Pm2Names.agentId(name)) logger.warn({ app: name }, 'pm2 runs an agent the domain schema does not define; leaving it alone');
  }
  return { adopted, lost };
}
