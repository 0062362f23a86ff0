/**
 * Consolidation: contradictions superseded, faded memories compacted, themes summarised.
 */
export { QUESTION_TAG, SAID_TAG } from './claims.js';
export { consolidateWithin } from './consolidate-within.js';
export { type ConsolidationReport, type ConsolidationScope } from './consolidation-report.js';
export { MemoryConsolidator } from './memory-consolidator.js';
