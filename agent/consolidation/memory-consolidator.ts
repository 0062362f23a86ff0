import { type MemorySettings } from '../../shared/config/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { ConceptTracker } from '../concepts/concept-tracker.js';
import type { AgentMemory } from '../memory/agent-memory.js';
import { entry } from '../memory/map-entry.js';
import { isCurrent, type MemoryRecord } from '../memory/memory-record.js';
import type { MemoryStore } from '../memory/memory-store.js';
import { memoryStrength } from '../memory/memory-strength.js';
import { STOP_WORDS } from '../memory/stop-words.js';
import { holdsClaim, JACCARD_MIN, overlaps, parseClaim } from './claims.js';
import { Plan } from './consolidation-plan.js';
import type { ConsolidationReport, ConsolidationScope, ConsolidationTrigger } from './consolidation-report.js';

const SNIPPET_CHARS = 100;
const MAX_CONCEPTS_PER_MEMORY = 12;
const LAST_RUN_META = 'consolidated_at';
const DAY_MS = 86_400_000;

/** Words an insight from its source memories and a draft; undefined keeps the draft. */
export type InsightWriter = (sources: readonly string[], draft: string) => Promise<string | undefined>;

/**
 * Consolidates an agent's memories (a model, when one is set, only words the themes):
 * - **themes**: concepts (or pairs of concepts) that recur across memories become an insight
 *   memory that points to its sources; the sources gain importance;
 * - **contradictions**: a newer memory that says the opposite of an older one ("the mill is not
 *   safe" after "the mill is safe") supersedes it, with a pointer and a reason;
 * - **fading**: memories weaker than `[memory] demote_below` are demoted, and a day's demoted
 *   memories, once there are enough, are compacted into one digest memory.
 * Everything it writes goes in one transaction; nothing is deleted and no content is rewritten.
 * Insight ids derive from what they are made of, so running it twice changes nothing.
 */
export class MemoryConsolidator {
  readonly #memory: AgentMemory;
  readonly #store: MemoryStore;
  readonly #concepts: ConceptTracker | undefined;
  readonly #settings: MemorySettings;
  readonly #logger: Logger | undefined;
  #running: Promise<ConsolidationReport> | undefined;
  #writer: InsightWriter | undefined;

  constructor(options: {
    memory: AgentMemory;
    store: MemoryStore;
    concepts?: ConceptTracker | undefined;
    settings: MemorySettings;
    logger?: Logger | undefined;
  }) {
    this.#memory = options.memory;
    this.#store = options.store;
    this.#concepts = options.concepts;
    this.#settings = options.settings;
    this.#logger = options.logger;
  }

  /**
   * Has a model put each new theme into words (`[llm.consolidation]`): it is given the draft
   * and the source memories. When it fails, the draft is kept; the run is not lost.
   */
  useWriter(writer: InsightWriter): void {
    this.#writer = writer;
  }

  /**
   * Consolidates the memories in `scope`. Runs one at a time: a call while one runs waits for
   * it, then runs. `dryRun` reports without writing.
   */
  async consolidate(
    scope: ConsolidationScope = {},
    options: { trigger?: ConsolidationTrigger; dryRun?: boolean; now?: number } = {},
  ): Promise<ConsolidationReport> {
    const previous = this.#running;
    const run = (async () => {
      await previous?.catch(() => undefined);
      // Concepts of memories written just now are found by a hook: let it finish first.
      await this.#memory.settle();
      return this.#run(scope, options.trigger ?? 'demand', options.dryRun ?? false, options.now ?? Date.now());
    })();
    this.#running = run;
    try {
      return await run;
    } finally {
      if (this.#running === run) this.#running = undefined;
    }
  }

  async #run(scope: ConsolidationScope, trigger: ConsolidationTrigger, dryRun: boolean, now: number): Promise<ConsolidationReport> {
    const started = performance.now();
    const inScope = [...this.#memory.all()].filter((m) => isCurrent(m) && m.insight_key === undefined && inside(m, scope));
    inScope.sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id));
    const plan = new Plan(this.#memory, now);
    this.#themes(inScope, scopeKey(scope), plan);
    this.#contradictions(inScope, plan, await this.#freshSince(scope, trigger));
    this.#fade(scope, plan, now);
    const report: ConsolidationReport = {
      trigger,
      scope,
      examined: inScope.length,
      insights: plan.insights,
      superseded: plan.superseded,
      importance: plan.importance,
      demoted: plan.demoted,
      dry_run: dryRun,
      took_ms: 0,
    };
    if (!dryRun) {
      await this.#word(plan);
      await this.#memory.commit(
        plan.created,
        [...plan.changes].map(([id, changes]) => ({ id, changes })),
        now,
      );
      if (isWhole(scope)) await this.#store.setMeta(LAST_RUN_META, now);
    }
    report.took_ms = Math.round(performance.now() - started);
    this.#logger?.info(
      {
        trigger,
        examined: report.examined,
        insights: report.insights.length,
        superseded: report.superseded.length,
        demoted: report.demoted.length,
        took_ms: report.took_ms,
        dry_run: dryRun,
      },
      'memories consolidated',
    );
    return report;
  }

  /** Rewrites the new theme insights through the writer, one at a time. */
  async #word(plan: Plan): Promise<void> {
    const writer = this.#writer;
    if (!writer) return;
    for (const created of plan.created) {
      if (created.source.by !== 'consolidation:theme') continue;
      const sources = (created.derived_from ?? []).map((id) => this.#memory.get(id)?.content).filter((c): c is string => c !== undefined);
      try {
        const worded = await writer(sources, created.content);
        if (worded) {
          created.content = worded;
          const listed = plan.insights.find((i) => i.id === created.id);
          if (listed) listed.content = worded;
        }
      } catch (err) {
        this.#logger?.warn({ err, insight: created.id }, 'the consolidation model did not word an insight; its draft is kept');
      }
    }
  }

  /** Contradictions are looked for among memories newer than this (a scheduled or passivation run checks only what is new). */
  async #freshSince(scope: ConsolidationScope, trigger: ConsolidationTrigger): Promise<number> {
    if (trigger === 'demand' || !isWhole(scope)) return -Infinity;
    const last = await this.#store.getMeta<number>(LAST_RUN_META);
    return typeof last === 'number' ? last : -Infinity;
  }

  /** Concepts, and pairs of concepts, that recur across at least `theme_min_support` memories. */
  #themes(memories: readonly MemoryRecord[], scope: string, plan: Plan): void {
    const tracker = this.#concepts;
    const s = this.#settings;
    if (!tracker || s.themes_max === 0) return;
    const groups = new Map<string, MemoryRecord[]>();
    const add = (key: string, m: MemoryRecord) => entry(groups, key, () => []).push(m);
    for (const m of memories) {
      const keys = [...tracker.conceptsOf(m.id)].sort().slice(0, MAX_CONCEPTS_PER_MEMORY);
      for (const [i, a] of keys.entries()) {
        add(a, m);
        for (const b of keys.slice(i + 1)) add(`${a}+${b}`, m);
      }
    }
    const qualifying = [...groups].filter(([, list]) => list.length >= s.theme_min_support);
    // Pairs before single concepts, then by support; a concept already in a chosen pair is not a theme alone.
    qualifying.sort(([a, x], [b, y]) => Number(b.includes('+')) - Number(a.includes('+')) || y.length - x.length || a.localeCompare(b));
    const covered = new Set<string>();
    let written = 0;
    for (const [group, sources] of qualifying) {
      if (written >= s.themes_max) break;
      const keys = group.split('+');
      if (keys.length === 1 && covered.has(group)) continue;
      for (const k of keys) covered.add(k);
      written++;
      const names = keys.map((k) => tracker.nameOf(k));
      const subject = names.length === 1 ? `${names[0]} comes up` : `${names.join(' and ')} come up together`;
      // Names and a few common words, not quotes: an insight must not outrank its sources on their own words.
      const about = commonWords(sources, names);
      const content = `${subject} in ${sources.length} memories${span(sources)}${about.length ? `, mostly about ${about.join(', ')}` : ''}.`;
      const added = plan.insight({ kind: 'theme', key: `theme:${group}@${scope}`, content, sources, tags: ['insight', 'theme', ...keys] });
      if (!added) continue;
      for (const m of sources) {
        if (added.previousSources.has(m.id)) continue;
        plan.raiseImportance(m, s.theme_importance_step, `supports the theme "${names.join(' and ')}"`);
      }
    }
  }

  /**
   * A memory that states the opposite of an older one (a negation, or a word and its opposite,
   * over mostly the same words) supersedes it. Candidate pairs come from a set-similarity join
   * with prefix filtering: two word sets with a Jaccard index of at least 0.6 share one of the
   * rarest few words of each, so only memories indexed under those words are compared.
   */
  #contradictions(memories: readonly MemoryRecord[], plan: Plan, freshSince: number): void {
    const claims = new Map<string, { m: MemoryRecord; words: Set<string>; negated: boolean }>();
    for (const m of this.#memory.all()) {
      if (m.insight_key !== undefined || !isCurrent(m) || !holdsClaim(m.tags)) continue;
      const claim = parseClaim(m.content);
      if (claim.words.size >= 2) claims.set(m.id, { m, ...claim });
    }
    const df = new Map<string, number>();
    for (const c of claims.values()) for (const w of c.words) df.set(w, (df.get(w) ?? 0) + 1);
    const prefix = (words: Set<string>) => {
      const sorted = [...words].sort((a, b) => df.get(a)! - df.get(b)! || (a < b ? -1 : 1));
      return sorted.slice(0, words.size - Math.ceil(JACCARD_MIN * words.size) + 1);
    };
    const byWord = new Map<string, string[]>();
    for (const [id, c] of claims) {
      for (const w of prefix(c.words)) entry(byWord, w, () => []).push(id);
    }
    for (const newer of memories) {
      const claim = claims.get(newer.id);
      if (!claim || newer.created_at < freshSince || plan.isSuperseded(newer.id)) continue;
      const candidates = new Set(prefix(claim.words).flatMap((w) => byWord.get(w) ?? []));
      for (const id of candidates) {
        const other = claims.get(id)!;
        const older = other.m;
        if (id === newer.id || older.created_at > newer.created_at || (older.created_at === newer.created_at && older.id > newer.id))
          continue;
        if (plan.isSuperseded(older.id) || claim.negated === other.negated || !overlaps(claim.words, other.words)) continue;
        const reason = `contradicted by a newer memory (${newer.id}): "${clip(newer.content)}"`;
        plan.supersede(older, newer.id, reason);
        plan.insight({
          kind: 'contradiction',
          key: `contradiction:${older.id}`,
          content: `Changed belief (${day(newer.created_at)}): "${clip(older.content)}" no longer holds; a newer memory says otherwise.`,
          sources: [older, newer],
          tags: ['insight', 'contradiction'],
        });
      }
    }
  }

  /** Demotes memories that faded; compacts a day's demoted memories into a digest once there are `compact_min`. */
  #fade(scope: ConsolidationScope, plan: Plan, now: number): void {
    const s = this.#settings;
    if (s.demote_below === 0) return;
    const faded: MemoryRecord[] = [];
    for (const m of this.#memory.all()) {
      if (
        m.insight_key !== undefined ||
        m.superseded_by !== undefined ||
        m.compacted_into !== undefined ||
        plan.isSuperseded(m.id) ||
        !inside(m, scope)
      )
        continue;
      if (m.demoted_at === undefined) {
        if (memoryStrength(m, now, s) >= s.demote_below) continue;
        plan.change(m.id, { demoted_at: now });
        plan.demoted.push(m.id);
      }
      faded.push(m);
    }
    const byDay = new Map<string, MemoryRecord[]>();
    for (const m of faded) entry(byDay, day(m.created_at), () => []).push(m);
    for (const [d, group] of byDay) {
      if (group.length < s.compact_min) continue;
      group.sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id));
      const head = `Faded memories of ${d} (${group.length}): `;
      const body = group.map((m) => m.content).join(' | ');
      const content = (head + body).slice(0, s.max_content_chars);
      const tags = [...new Set(['digest', ...group.flatMap((m) => m.tags)])].slice(0, s.max_tags);
      const digest = plan.insight({
        kind: 'digest',
        key: `digest:${d}:${group[0]!.id}`,
        content,
        sources: group,
        tags,
        importance: Math.max(...group.map((m) => m.importance)),
      });
      if (digest) for (const m of group) plan.change(m.id, { compacted_into: digest.id });
    }
  }
}

function inside(m: MemoryRecord, scope: ConsolidationScope): boolean {
  return (
    (scope.session === undefined || m.source.thread === scope.session) &&
    (scope.since === undefined || m.created_at >= scope.since) &&
    (scope.until === undefined || m.created_at <= scope.until) &&
    (scope.tag === undefined || m.tags.includes(scope.tag))
  );
}

/** Whether a scope narrows nothing. */
function isWhole(scope: ConsolidationScope): boolean {
  return Object.values(scope).every((v) => v === undefined);
}

/** A stable name for a scope, part of an insight's key: the same scope restated supersedes its earlier insight. */
function scopeKey(scope: ConsolidationScope): string {
  const parts = (['session', 'tag', 'since', 'until'] as const).filter((k) => scope[k] !== undefined).map((k) => `${k}=${scope[k]}`);
  return parts.length === 0 ? 'all' : parts.join(',');
}

function clip(text: string, max = SNIPPET_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function day(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

function span(sources: readonly MemoryRecord[]): string {
  const first = day(sources[0]!.created_at);
  const last = day(sources[sources.length - 1]!.created_at);
  return first === last ? ` (${first})` : ` (${first} to ${last})`;
}

/** Up to three words (not stop words, not the theme's names) found in most of the sources, in at least two. */
function commonWords(sources: readonly MemoryRecord[], names: readonly string[]): string[] {
  const named = new Set(names.flatMap((n) => n.toLowerCase().split(/\s+/)));
  const counts = new Map<string, number>();
  for (const m of sources) {
    const words = new Set((m.content.toLowerCase().match(/\p{L}{4,}/gu) ?? []).filter((w) => !STOP_WORDS.has(w) && !named.has(w)));
    for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  return [...counts]
    .filter(([, n]) => n >= 2)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .slice(0, 3)
    .map(([w]) => w);
}
