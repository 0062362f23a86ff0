/**
 * Consolidation: contradictions superseded, faded memories compacted, themes summarised.
 */
export { consolidateWithin } from './consolidate-within.js';
export { type ConsolidationReport, type ConsolidationScope, MemoryConsolidator } from './memory-consolidator.js';
