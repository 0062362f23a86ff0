import type { MemorySettings } from '../../shared/config/index.js';
import type { CascadeStage } from './cascade-recall.js';
import type { Relevance } from './fused-ranking.js';
import type { MemoryRecord, RecallHit } from './memory-record.js';
import { memoryStrength } from './memory-strength.js';

/**
 * What a search found, as recall answers it: each memory still held, scored by its relevance
 * times its strength on the forgetting curve now (with the parts of the score, rounded), best
 * first and the newest first among equals.
 */
export function recallHits(
  found: ReadonlyArray<Relevance & { stages?: CascadeStage[]; fuzzy?: boolean }>,
  get: (id: string) => MemoryRecord | undefined,
  strategy: RecallHit['score']['strategy'],
  now: number,
  settings: MemorySettings,
): RecallHit[] {
  const hits: RecallHit[] = [];
  for (const f of found) {
    const memory = get(f.id);
    if (!memory) continue;
    const strength = memoryStrength(memory, now, settings);
    const score: RecallHit['score'] = { strategy, bm25: round(f.bm25), strength: round(strength), final: round(f.relevance * strength) };
    if (f.vector !== undefined) score.vector = round(f.vector);
    if (f.stages) score.stages = f.stages;
    if (f.fuzzy) score.fuzzy = true;
    hits.push({ memory, score });
  }
  return hits.sort((a, b) => b.score.final - a.score.final || b.memory.created_at - a.memory.created_at);
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
