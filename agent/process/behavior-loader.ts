import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import type { ThymosConfig } from '../../shared/config/index.js';
import type { AgentDefinition } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { AgentBehavior, AgentBehaviorContext, CreateBehavior, TalkRequest } from '../runtime/agent-behavior.js';
import { DialogueBehavior } from '../runtime/dialogue-behavior.js';

/**
 * The agent's behaviour: the module `[agent] behavior` names, its `createBehavior()` (or default
 * export) called with the agent's id and definition; without one, `DialogueBehavior`.
 */
export async function loadBehavior(options: { config: ThymosConfig; id: string; definition: AgentDefinition }): Promise<AgentBehavior> {
  const { config, id, definition } = options;
  if (!config.behaviorPath) return new DialogueBehavior();
  const path = resolve(config.behaviorPath);
  let mod: { createBehavior?: CreateBehavior; default?: CreateBehavior };
  try {
    mod = (await import(pathToFileURL(path).href)) as typeof mod;
  } catch (err) {
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `agent.behavior: cannot load ${path}: ${(err as Error).message}`, {
      cause: err,
      location: { file: config.file, path: 'agent.behavior' },
    });
  }
  const create = mod.createBehavior ?? mod.default;
  if (typeof create !== 'function') {
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `agent.behavior: ${path} must export a function createBehavior()`, {
      location: { file: config.file, path: 'agent.behavior' },
    });
  }
  const behavior = (await create({ id, definition })) as Partial<AgentBehavior> | null | undefined;
  const notFunctions = ['talk', 'evaluateRelevance', 'work'].filter(
    (k) =>
      behavior && (behavior as Record<string, unknown>)[k] !== undefined && typeof (behavior as Record<string, unknown>)[k] !== 'function',
  );
  if (!behavior || typeof behavior !== 'object' || notFunctions.length > 0) {
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `agent.behavior: createBehavior() in ${path} must return an object whose talk, evaluateRelevance and work, where given, are functions${notFunctions.length > 0 ? ` (not: ${notFunctions.join(', ')})` : ''}`,
      {
        location: { file: config.file, path: 'agent.behavior' },
      },
    );
  }
  // A module may give only what it changes: without talk(), the agent talks as DialogueBehavior does.
  if (typeof behavior.talk === 'function') return behavior as AgentBehavior;
  const dialogue = new DialogueBehavior();
  return Object.assign(Object.create(behavior) as AgentBehavior, {
    talk: (ctx: AgentBehaviorContext, req: TalkRequest) => dialogue.talk(ctx, req),
  });
}
