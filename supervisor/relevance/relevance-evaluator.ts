import { pathToFileURL } from 'node:url';

import { closest, distance } from 'fastest-levenshtein';
import { z } from 'zod';

import {
  type AgentDefinition,
  agentIdsPreview,
  BUILT_IN_AGENT_PROPERTIES,
  type Condition,
  type DomainSchema,
  type RelevanceRule,
} from '../../shared/domain/index.js';
import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { ReconcileContext, RelevanceInput } from '../../shared/protocol/index.js';
/** Where a score came from. `pinned` agents are not scored. */
export type ScoreSource = 'forced' | 'module' | 'work' | 'rules' | 'agent' | 'default';

/** What an application's relevance module's `evaluate` receives for one agent. */
export interface RelevanceModuleInput extends RelevanceInput {
  id: string;
  definition: AgentDefinition;
}

/**
 * An application's relevance module, named by `[supervisor] relevance` in `thymos.toml`.
 *
 * @example
 * // relevance.js
 * export function evaluate({ id, global, properties }) {
 *   return global.boss_fight && id === 'captain_lysa' ? 1 : undefined;
 * }
 */
export interface RelevanceModule {
  evaluate(input: RelevanceModuleInput): number | undefined | Promise<number | undefined>;
  /**
   * The context properties `evaluate` reads, so that reconcile can tell a typo from a property
   * in use. Without it (and without `contextProperties` in the Pkl domain) context properties
   * are not checked, since a module cannot be inspected.
   */
  contextProperties?: { agent?: string[]; global?: string[] };
}

const ModulePropertiesSchema = z
  .object({ agent: z.array(z.string()).optional(), global: z.array(z.string()).optional() })
  .strict()
  .optional();

/** Asks a running agent for its own score; resolves undefined when it has none or misses the deadline. */
export type AskAgent = (id: string, input: RelevanceInput) => Promise<number | undefined>;

export interface Score {
  score: number;
  source: ScoreSource;
}

export interface RelevanceEvaluatorOptions {
  domain: DomainSchema;
  defaultScore: number;
  module?: RelevanceModule | undefined;
  /** Consulted for running agents only, when neither the module nor the rules score them. */
  askAgent?: AskAgent | undefined;
  /** An agent's score from the work waiting (the domain's `workRelevance`), or undefined when it takes no jobs. */
  work?: ((id: string) => number | undefined) | undefined;
}

/**
 * Scores agents from a reconcile context. The first source that gives a score wins:
 * a forced `relevance` property, the application's module, the work waiting (for agents that
 * take jobs, when the domain declares `workRelevance`), the Pkl rules (the highest
 * score of the rules that match), the running agent's own answer, the default.
 */
export class RelevanceEvaluator {
  readonly #domain: DomainSchema;
  readonly #defaultScore: number;
  readonly #module: RelevanceModule | undefined;
  readonly #askAgent: AskAgent | undefined;
  readonly #work: ((id: string) => number | undefined) | undefined;
  readonly #rulesByAgent = new Map<string, RelevanceRule[]>();
  /** The context properties something reads, or undefined when that cannot be known (a module that does not say). */
  readonly #known: { agent: Set<string>; global: Set<string> } | undefined;
  /** Each agent's location as the last applied reconcile context that named it gave it. */
  readonly #locations = new Map<string, string | null>();

  constructor(options: RelevanceEvaluatorOptions) {
    this.#domain = options.domain;
    this.#defaultScore = options.defaultScore;
    this.#module = options.module;
    this.#askAgent = options.askAgent;
    this.#work = options.work;
    this.#known = knownProperties(options.domain, options.module);
    for (const id of Object.keys(options.domain.agents)) {
      this.#rulesByAgent.set(
        id,
        options.domain.relevanceRules.filter((r) => r.agents.length === 0 || r.agents.includes(id)),
      );
    }
  }

  /** Loads `[supervisor] relevance`: a module exporting `evaluate`. */
  static async loadModule(path: string): Promise<RelevanceModule> {
    let mod: Partial<RelevanceModule>;
    try {
      mod = (await import(pathToFileURL(path).href)) as Partial<RelevanceModule>;
    } catch (err) {
      throw new ThymosError(ErrorCode.CONFIG_INVALID, `supervisor.relevance: cannot load ${path}: ${(err as Error).message}`, {
        cause: err,
        location: { file: path, path: 'supervisor.relevance' },
      });
    }
    if (typeof mod.evaluate !== 'function') {
      throw new ThymosError(
        ErrorCode.CONFIG_INVALID,
        `supervisor.relevance: ${path} must export a function evaluate(input); found ${typeof mod.evaluate}`,
        {
          location: { file: path, path: 'supervisor.relevance' },
        },
      );
    }
    const declared = ModulePropertiesSchema.safeParse(mod.contextProperties);
    if (!declared.success) {
      throw new ThymosError(
        ErrorCode.CONFIG_INVALID,
        `supervisor.relevance: ${path} exports contextProperties that are not { agent?: string[], global?: string[] }: ${describeIssues(declared.error, mod.contextProperties)}`,
        {
          location: { file: path, path: 'supervisor.relevance' },
        },
      );
    }
    return { evaluate: mod.evaluate.bind(mod), ...(declared.data ? { contextProperties: declared.data } : {}) };
  }

  /**
   * Checks a context before it is used: an agent the schema does not define is INVALID_CONTEXT;
   * returns a warning for each property nothing declares or uses (with `strict`, they are
   * INVALID_CONTEXT instead), naming the declared one it is likely a typo of.
   */
  checkContext(context: ReconcileContext, strict = false): string[] {
    for (const id of Object.keys(context.agents)) {
      if (!Object.hasOwn(this.#domain.agents, id)) {
        const expected = agentIdsPreview(Object.keys(this.#domain.agents));
        throw new ThymosError(
          ErrorCode.INVALID_CONTEXT,
          `context: agents.${id}: no agent "${id}" in the domain schema; expected one of ${expected}`,
          { location: { path: `agents.${id}` } },
        );
      }
    }
    const known = this.#known;
    if (!known) return [];
    const warnings: string[] = [];
    const check = (path: string, name: string, set: Set<string>, where: string) => {
      if (set.has(name)) return;
      const near = set.size > 0 ? closest(name, [...set]) : undefined;
      const hint = near !== undefined && distance(name, near) <= Math.max(2, Math.floor(name.length / 3)) ? ` (did you mean ${near}?)` : '';
      warnings.push(
        `context: ${path}: no relevance rule uses "${name}" and contextProperties.${where} does not declare it, so it changes no score${hint}`,
      );
    };
    for (const name of Object.keys(context.global)) check(`global.${name}`, name, known.global, 'global');
    for (const [id, props] of Object.entries(context.agents))
      for (const name of Object.keys(props)) check(`agents.${id}.${name}`, name, known.agent, 'agent');
    if (strict && warnings.length > 0) {
      throw new ThymosError(ErrorCode.INVALID_CONTEXT, `${warnings.join('; ')} (--strict makes these errors)`, { details: { warnings } });
    }
    return warnings;
  }

  /** Remembers the locations an applied (not dry-run) reconcile context gives its agents. */
  observe(context: ReconcileContext): void {
    for (const [id, given] of Object.entries(context.agents)) {
      if ('location' in given) this.#locations.set(id, typeof given.location === 'string' ? given.location : null);
    }
  }

  /** Where an agent is now: as the last applied context that named its location said, else its home. */
  locationOf(id: string): string | null {
    return this.#locations.has(id) ? this.#locations.get(id)! : (this.#domain.agents[id]?.homeLocation ?? null);
  }

  propertiesOf(id: string, context: ReconcileContext): Record<string, unknown> {
    const def = this.#domain.agents[id];
    const given = context.agents[id] ?? {};
    return def?.homeLocation != null && given.location === undefined ? { location: def.homeLocation, ...given } : { ...given };
  }

  /**
   * Scores one agent. Throws INVALID_INPUT when the application's module fails or
   * returns something other than a number from 0 to 1 or undefined.
   */
  async score(id: string, context: ReconcileContext, running: boolean): Promise<Score> {
    const properties = this.propertiesOf(id, context);
    const forced = context.agents[id]?.relevance;
    if (forced !== undefined) return { score: forced, source: 'forced' };
    const input: RelevanceInput = { tick: context.tick, global: context.global, properties };
    if (this.#module) {
      const definition = this.#domain.agents[id];
      let value: unknown;
      try {
        value = await this.#module.evaluate({ id, definition: definition!, ...input });
      } catch (err) {
        throw new ThymosError(ErrorCode.INVALID_INPUT, `relevance module threw for ${id}: ${(err as Error).message}`, { cause: err });
      }
      if (value !== undefined) {
        if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
          throw new ThymosError(
            ErrorCode.INVALID_INPUT,
            `relevance module returned ${JSON.stringify(value)} for ${id}; expected a number from 0 to 1 or undefined`,
          );
        }
        return { score: value, source: 'module' };
      }
    }
    const fromWork = this.#work?.(id);
    if (fromWork !== undefined) return { score: fromWork, source: 'work' };
    const byRules = this.scoreByRules(id, context.global, properties);
    if (byRules !== undefined) return { score: byRules, source: 'rules' };
    if (running && this.#askAgent) {
      const own = await this.#askAgent(id, input);
      if (own !== undefined) return { score: own, source: 'agent' };
    }
    return { score: this.#defaultScore, source: 'default' };
  }

  /**
   * Scores many agents at once. Forced scores and rules are computed synchronously; only
   * the agents that need the application's module or their own answer wait on a promise,
   * so a large fleet pays for what it uses. A failing agent gets its error, not a score.
   */
  async scoreAll(
    agents: ReadonlyArray<{ id: string; running: boolean }>,
    context: ReconcileContext,
  ): Promise<Map<string, Score | ThymosError>> {
    const out = new Map<string, Score | ThymosError>();
    const pending: Array<Promise<void>> = [];
    for (const { id, running } of agents) {
      const forced = context.agents[id]?.relevance;
      if (forced !== undefined) {
        out.set(id, { score: forced, source: 'forced' });
        continue;
      }
      if (!this.#module) {
        const fromWork = this.#work?.(id);
        if (fromWork !== undefined) {
          out.set(id, { score: fromWork, source: 'work' });
          continue;
        }
        const byRules = this.scoreByRules(id, context.global, this.propertiesOf(id, context));
        if (byRules !== undefined) {
          out.set(id, { score: byRules, source: 'rules' });
          continue;
        }
        if (!running || !this.#askAgent) {
          out.set(id, { score: this.#defaultScore, source: 'default' });
          continue;
        }
      }
      pending.push(
        this.score(id, context, running).then(
          (s) => void out.set(id, s),
          (err: unknown) =>
            void out.set(id, err instanceof ThymosError ? err : new ThymosError(ErrorCode.INTERNAL, String(err), { cause: err })),
        ),
      );
    }
    await Promise.all(pending);
    return out;
  }

  /** The highest score among the Pkl rules that match, or undefined when none does. */
  scoreByRules(id: string, global: Record<string, unknown>, properties: Record<string, unknown>): number | undefined {
    const rules = this.#rulesByAgent.get(id);
    if (!rules?.length) return undefined;
    // A rule may test the agent itself (its homeLocation and tags) where its context entry says nothing of them.
    const def = this.#domain.agents[id];
    const seen = def ? { homeLocation: def.homeLocation ?? null, tags: def.tags, ...properties } : properties;
    let best: number | undefined;
    for (const rule of rules) {
      if ((best === undefined || rule.score > best) && matches(rule.condition, global, seen)) best = rule.score;
    }
    return best;
  }
}

/** The context properties the rules, the Pkl declarations and the module read; undefined when a module reads what it does not say. */
function knownProperties(
  domain: DomainSchema,
  module: RelevanceModule | undefined,
): { agent: Set<string>; global: Set<string> } | undefined {
  const declared = domain.contextProperties;
  if (module && !module.contextProperties && declared.agent.length === 0 && declared.global.length === 0) return undefined;
  const agent = new Set([...BUILT_IN_AGENT_PROPERTIES, ...declared.agent, ...(module?.contextProperties?.agent ?? [])]);
  const global = new Set([...declared.global, ...(module?.contextProperties?.global ?? [])]);
  for (const r of domain.relevanceRules) {
    agent.add(r.condition.property);
    if (r.condition.kind === 'same_as') global.add(r.condition.global);
  }
  return { agent, global };
}

/** Whether a condition holds; a list property (an agent's `tags`) equals each value it holds and is true when not empty. */
function matches(c: Condition, global: Record<string, unknown>, properties: Record<string, unknown>): boolean {
  const v = properties[c.property];
  const holds = (x: unknown) => (Array.isArray(v) ? v.includes(x) : v === x);
  switch (c.kind) {
    case 'equals':
      return holds(c.value);
    case 'truthy':
      return Array.isArray(v) ? v.length > 0 : Boolean(v);
    case 'same_as': {
      const g = global[c.global];
      return g !== undefined && g !== null && holds(g);
    }
    case 'at_most':
      return typeof v === 'number' && v <= c.value;
  }
}
