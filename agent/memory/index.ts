/**
 * Private memory: records in SurrealDB, the in-process BM25 and vector indexes kept in step with it, and strength.
 */
export { AgentMemory, type ConceptCompanionWrite, type NewMemory, type RecallOptions } from './agent-memory.js';
export { Bm25Index } from './bm25-index.js';
export { entry } from './map-entry.js';
export { isCurrent, type MemoryChanges, type MemoryRecord, type MemorySource, type RecallHit } from './memory-record.js';
export { type ConceptRecord, type ConceptWrite, MemoryStore } from './memory-store.js';
export { memoryStrength } from './memory-strength.js';
export { resolveSearchStrategy } from './search-strategy.js';
export { STOP_WORDS } from './stop-words.js';
