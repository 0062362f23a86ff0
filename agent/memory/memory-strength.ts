import { type MemorySettings } from '../../shared/config/index.js';
import type { MemoryRecord } from './memory-record.js';

const HOUR_MS = 3_600_000;

/**
 * Strength of a memory on the forgetting curve: R = e^(-t/S), where t is the hours
 * since it was last accessed and the stability S grows with how often it was
 * recalled, how important it is, and how much feeling it carries.
 */
export function memoryStrength(
  memory: Pick<MemoryRecord, 'last_accessed' | 'access_count' | 'importance' | 'emotional_weight'>,
  now: number,
  settings: Pick<MemorySettings, 'stability_hours' | 'access_boost' | 'importance_boost' | 'emotion_boost'>,
): number {
  const hours = Math.max(0, now - memory.last_accessed) / HOUR_MS;
  const stability =
    settings.stability_hours *
    (1 + settings.access_boost * memory.access_count) *
    (1 + settings.importance_boost * memory.importance) *
    (1 + settings.emotion_boost * memory.emotional_weight);
  return Math.exp(-hours / stability);
}
