import type { WorldWatch } from '../../shared/domain/index.js';
import type { WorldClient, WorldSubscription } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { WorldChange } from '../../shared/protocol/index.js';
import type { NewMemory } from '../memory/agent-memory.js';
import type { Hearing } from '../runtime/runtime-ports.js';

const VERB = { create: 'appeared', update: 'changed', delete: 'was removed' } as const;

/**
 * The agent's standing live queries on the world (`worldWatches` of the domain schema that
 * apply to it). Each matching change becomes a memory with the world as its source. Keys
 * (`watch:<n>`) make them idempotent: a restarted agent takes its subscriptions back rather
 * than adding more. They end with the agent (the supervisor ends them when it stops it).
 */
export class AgentWorldWatcher {
  readonly #runtime: Hearing;
  readonly #watches: ReadonlyArray<{ index: number; watch: WorldWatch }>;
  readonly #logger: Logger;
  readonly #subs: WorldSubscription[] = [];
  noticed = 0;

  constructor(runtime: Hearing, watches: ReadonlyArray<{ index: number; watch: WorldWatch }>, logger: Logger) {
    this.#runtime = runtime;
    this.#watches = watches;
    this.#logger = logger;
  }

  async open(world: WorldClient): Promise<void> {
    for (const { index, watch } of this.#watches) {
      const sub = await world.subscribe({ table: watch.table, where: watch.where }, (change) => void this.#notice(change), {
        key: `watch:${index}`,
      });
      this.#subs.push(sub);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.#subs.splice(0).map((s) => s.close()));
  }

  async #notice(change: WorldChange): Promise<void> {
    try {
      await this.#runtime.hear([worldMemory(change)]);
      this.noticed++;
    } catch (err) {
      this.#logger.warn({ err: (err as Error).message, table: change.table, id: change.id }, 'world change not remembered');
    }
  }
}

/** A world change as a memory: what changed, its fields, and who changed it. */
export function worldMemory(change: WorldChange): NewMemory {
  const { id: _id, updated_at, updated_by, ...fields } = change.row as Record<string, unknown>;
  const shown = Object.entries(fields)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`)
    .join('; ');
  const by = typeof updated_by === 'string' && updated_by ? updated_by : 'the world';
  return {
    id: `world-${change.table}-${change.id}-${String(updated_at)}-${change.action}`.slice(0, 200),
    content: `${change.table} ${change.id} ${VERB[change.action]} (${shown || 'no fields'}), by ${by}`,
    importance: 0.5,
    tags: ['world', change.table, change.action],
    source: { kind: 'world', by },
  };
}
