/**
 * Consolidation: contradictions superseded, faded memories compacted, themes summarised.
 */
export { type ConsolidationReport, type ConsolidationScope, MemoryConsolidator } from './memory-consolidator.js';
