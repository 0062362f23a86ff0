import { createHash } from 'node:crypto';

import type { AgentMemory, NewMemory } from '../memory/agent-memory.js';
import { isCurrent, type MemoryChanges, type MemoryRecord } from '../memory/memory-record.js';
import type { ConsolidationReport, Insight } from './consolidation-report.js';

/** What one consolidation will write, built up before anything is written. */
export class Plan {
  readonly created: Array<NewMemory & { derived_from: string[]; insight_key: string }> = [];
  readonly changes = new Map<string, MemoryChanges>();
  readonly insights: Insight[] = [];
  readonly superseded: ConsolidationReport['superseded'] = [];
  readonly importance: ConsolidationReport['importance'] = [];
  readonly demoted: string[] = [];
  readonly #memory: AgentMemory;
  readonly #now: number;
  /** Current insights by key. */
  readonly #insights = new Map<string, MemoryRecord>();

  constructor(memory: AgentMemory, now: number) {
    this.#memory = memory;
    this.#now = now;
    for (const m of memory.all()) if (m.insight_key !== undefined && isCurrent(m)) this.#insights.set(m.insight_key, m);
  }

  change(id: string, changes: MemoryChanges): void {
    this.changes.set(id, { ...this.changes.get(id), ...changes });
  }

  isSuperseded(id: string): boolean {
    return this.changes.get(id)?.superseded_by !== undefined;
  }

  supersede(m: MemoryRecord, by: string, reason: string): void {
    this.change(m.id, { superseded_by: by, superseded_reason: reason, superseded_at: this.#now });
    this.superseded.push({ id: m.id, by, reason });
  }

  raiseImportance(m: MemoryRecord, step: number, reason: string): void {
    const from = this.changes.get(m.id)?.importance ?? m.importance;
    const to = Math.min(1, Math.round((from + step) * 1000) / 1000);
    if (to === from) return;
    this.change(m.id, { importance: to });
    const earlier = this.importance.find((c) => c.id === m.id);
    if (earlier) {
      earlier.to = to;
      earlier.reason += `; ${reason}`;
    } else {
      this.importance.push({ id: m.id, from, to, reason });
    }
  }

  /**
   * Plans an insight memory unless the same one (same key, same sources) is stored already;
   * a stored one with the same key and other sources is superseded by it. Returns the new
   * insight with the sources of the one it replaces, or undefined when nothing changed.
   */
  insight(input: {
    kind: Insight['kind'];
    key: string;
    content: string;
    sources: readonly MemoryRecord[];
    tags: string[];
    importance?: number;
  }): { id: string; previousSources: Set<string> } | undefined {
    const sources = input.sources.map((m) => m.id);
    const id = `${input.kind}-${createHash('sha256')
      .update(`${input.key}\n${sources.join('\n')}`)
      .digest('hex')
      .slice(0, 24)}`;
    if (this.#memory.get(id) || this.insights.some((i) => i.id === id)) return undefined;
    const before = this.#insights.get(input.key);
    if (before && !this.isSuperseded(before.id))
      this.supersede(before, id, `${input.kind} restated from ${before.derived_from?.length ?? 0} to ${sources.length} source memories`);
    const importance = input.importance ?? Math.min(1, Math.max(...input.sources.map((m) => m.importance)) + 0.2);
    this.created.push({
      id,
      content: input.content,
      importance,
      tags: input.tags,
      source: { kind: 'insight', by: `consolidation:${input.kind}` },
      derived_from: sources,
      insight_key: input.key,
    });
    this.insights.push({ id, kind: input.kind, content: input.content, sources });
    return { id, previousSources: new Set(before?.derived_from ?? []) };
  }
}
